"""Property-based fuzzing of the OpenAPI schema against a real server: no input gives a 5xx.

Schemathesis reads /api/v1/schema/ from pytest-django's live server and, for every
operation, sends a bounded number of generated requests (valid and invalid ones)
with a Bearer token of a user who owns a collection. Deterministic (derandomized
Hypothesis), no shrinking, no example database.
"""

from __future__ import annotations

import collections as _collections
import time

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from accounts.api_tokens import token_create
from knowledge.parameters import PARAMETERS
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload

MAX_EXAMPLES = 15  # per operation and generation mode
REQUEST_TIMEOUT = 120
QUESTION_PATHS = ("/api/v1/retrieve/", "/api/v1/query/")
DOCUMENT_TEXT = (
    "Expense policy\n\nEmployees may claim travel costs within thirty days. "
    "Receipts are required for every claim above twenty euros.\n\n"
    "Holidays\n\nEveryone has twenty-five days of paid leave per year."
)

FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,  # the same cases on every run
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
)


def _hits(case, protected: dict) -> bool:
    """Whether a case's path parameters name one of the protected objects."""
    parameters = case.path_parameters or {}
    return any(str(parameters.get(name)) == str(value) for name, value in protected.items())


_JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)


def _question_bodies(collection_id: int, *, overrides: bool):
    """A question about ``collection_id``, optionally with ``k`` and arbitrary parameter overrides."""
    body = {"question": st.text(min_size=1, max_size=200), "collections": st.just([collection_id])}
    optional = {}
    if overrides:
        optional["k"] = st.integers(min_value=1, max_value=100)
        optional["overrides"] = st.dictionaries(
            st.sampled_from(sorted(PARAMETERS)) | st.text(max_size=10), _JSON_SCALARS, max_size=4
        )
    return st.fixed_dictionaries(body, optional=optional)


@pytest.mark.django_db(transaction=True)
def test_no_server_errors_for_generated_requests(live_server, alice):
    collection = collection_create(name="fuzz target", owner=alice, description="fuzzed")
    token, secret = token_create(user=alice, name="fuzz")
    headers = {"Authorization": f"Bearer {secret}"}
    document = document_upload(
        collection=collection,
        uploaded_by=alice,
        sync=True,
        upload=DocumentUpload(filename="notes.txt", data=DOCUMENT_TEXT.encode()),
    ).document
    document.refresh_from_db()
    assert document.status == "ready", document.error
    targets = {"collection_id": collection.pk, "document_id": document.pk}
    protected = {**targets, "token_id": token.pk}
    schema = schemathesis.openapi.from_url(live_server.url + "/api/v1/schema/")

    failures: list[str] = []
    statuses: _collections.Counter[int] = _collections.Counter()
    operations = 0
    started = time.monotonic()

    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)
            path_names = {p.name for p in operation.path_parameters}
            if operation.method.upper() == "DELETE":
                # Never delete the target collection or revoke our own token: that would blunt
                # every operation after it (generated ids are small and can hit them).
                strategy = strategy.filter(lambda case: not _hits(case, protected))
            elif mode is GenerationMode.POSITIVE and operation.path in QUESTION_PATHS:
                # Questions against the owned collection, with fuzzed knowledge overrides, so the
                # search itself runs (random collection ids are all 400s).
                strategy = st.one_of(
                    strategy,
                    _question_bodies(collection.pk, overrides=operation.path.endswith("/retrieve/")).flatmap(
                        lambda body, op=operation, m=mode: op.as_strategy(
                            generation_mode=m, body=body, media_type="application/json"
                        )
                    ),
                )
            elif mode is GenerationMode.POSITIVE and path_names and path_names <= set(targets):
                # Half the valid cases aim at objects the user owns, to get past the 404s.
                real = {name: targets[name] for name in path_names}
                strategy = st.one_of(
                    strategy, operation.as_strategy(generation_mode=mode, path_parameters=real)
                )

            @FUZZ_SETTINGS
            @given(case=strategy)
            def run(case):
                response = case.call(base_url=live_server.url, headers=headers, timeout=REQUEST_TIMEOUT)
                statuses[response.status_code] += 1
                case.validate_response(response, checks=[not_a_server_error])

            try:
                run()
            except Exception as error:  # noqa: BLE001 - collect every operation's failure, then report
                failures.append(f"{operation.label} [{mode.value}]: {error}")

    elapsed = time.monotonic() - started
    requests = sum(statuses.values())
    print(f"fuzzed {operations} operations, {requests} requests in {elapsed:.0f}s: {dict(statuses)}")
    assert operations >= 20, "the schema lost most of its operations"
    assert not any(status >= 500 for status in statuses), dict(statuses)
    assert not failures, "\n\n".join(failures)
