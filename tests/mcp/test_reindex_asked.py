"""A re-index asked for again while it is under way queues nothing again, and costs the same on every path.

``reindex_collection`` used to queue every document again on each call (five calls on a collection
queued each document five times) and discarded the release being built to start it afresh. Now a
document waiting for a run of the same chunk profile joins that run, and the same release goes on.
Each re-index asked for counts one write of the caller's rate, whether asked on MCP, the API or the
page; one refused (an unknown profile, a collection the caller may not change) counts nothing.

The server here is the real one (scripts/serve.sh) with no worker and tasks left in the queue, so
what it queues stays queued for the test to count.
"""

from __future__ import annotations

import pytest
import requests
from django.db.models import Count
from django.test import Client

from accounts.api_tokens import token_create
from knowledge.models import ChunkProfile, Document, ProcessingJob, Release
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.conftest import CORPUS, throttle_rates
from tests.mcp.conftest import http_client, payload, run
from tests.served import served_application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security, pytest.mark.slow]

FILES = ("gravity_hill.md", "bates.txt", "obama.txt")
WRITES_PER_HOUR = 10


@pytest.fixture(scope="module")
def queueing_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """The application served with its tasks left in the (database) queue: no worker takes them."""
    log_dir = tmp_path_factory.mktemp("server")
    rate = f"{WRITES_PER_HOUR}/hour"  # an hour: no period ends while a test counts
    with served_application(
        log_dir, WEB_WORKERS="1", KNOWLEDGE_SYNC_TASKS="false", API_THROTTLE_WRITES=rate
    ) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def fixed_100(db) -> ChunkProfile:
    return ChunkProfile.objects.create(name="fixed 100", strategy="fixed", chunk_size=100, chunk_overlap=0)


def _collection(owner, name: str, files=FILES):
    """``owner``'s collection of ``files``, processed here (the tests' own tasks run at once)."""
    collection = collection_create(name=name, owner=owner)
    for filename in files:
        data = (CORPUS / "text" / filename).read_bytes()
        document_upload(collection=collection, upload=DocumentUpload(filename=filename, data=data))
    assert not collection.documents.exclude(status=Document.Status.READY).exists()
    return collection


def _reindex_five_times(url: str, token: str, arguments: dict) -> list[int]:
    async def scenario():
        async with http_client(url + "/mcp/", token) as client:
            calls = [await client.call_tool("reindex_collection", arguments) for _ in range(5)]
            return [payload(call)["documents_queued"] for call in calls]

    return run(scenario)


def _most_queued_per_document(collection) -> dict:
    """Per chunk profile (None: the collection's current one), the most queued jobs any one document has."""
    rows = (
        ProcessingJob.objects.filter(document__collection=collection, state=ProcessingJob.State.QUEUED)
        .values("document", "chunk_profile__name")
        .annotate(jobs=Count("pk"))
    )
    most: dict = {}
    for row in rows:
        name = row["chunk_profile__name"]
        most[name] = max(most.get(name, 0), row["jobs"])
    return most


def test_five_reindex_calls_queue_each_document_once(queueing_server, alice, fixed_100):
    notes = _collection(alice, "notes")
    token = token_create(user=alice, name="mcp")[1]

    again = _reindex_five_times(queueing_server, token, {"collection": notes.pk})
    under_fixed_100 = {"collection": notes.pk, "chunk_profile": "fixed 100"}
    rebuilt = _reindex_five_times(queueing_server, token, under_fixed_100)

    assert again == [len(FILES), 0, 0, 0, 0]
    assert rebuilt == [len(FILES), 0, 0, 0, 0]
    assert _most_queued_per_document(notes) == {None: 1, "fixed 100": 1}
    # One release is built; it is not discarded and started afresh by every call.
    releases = Release.objects.filter(collection=notes, chunk_profile=fixed_100)
    assert list(releases.values_list("state", flat=True)) == [Release.State.BUILDING]


def _outcome(status: int) -> str:
    return {202: "ok", 302: "ok", 429: "throttled"}.get(status, "refused")


def _outcomes(ask, mine: int, refused: list[tuple[int, str]], asks: int) -> list[str]:
    """One ask that works, the ``refused`` ones, then ``asks`` more that would work but for the rate."""
    first = [_outcome(ask(mine, "fixed 100"))]
    refusals = [_outcome(ask(target, profile)) for target, profile in refused]
    return first + refusals + [_outcome(ask(mine, "fixed 100")) for _ in range(asks)]


def _api_ask(base: str, user):
    """POST /api/v1/documents/{id}/reindex/ with a chunk profile: the collection's re-index on the API."""
    headers = {"Authorization": f"Bearer {token_create(user=user, name='api')[1]}"}

    def ask(document_id: int, profile: str) -> int:
        url = f"{base}/api/v1/documents/{document_id}/reindex/"
        return requests.post(url, json={"chunk_profile": profile}, headers=headers, timeout=120).status_code

    return ask


def _mcp_outcomes(base: str, user, mine: int, refused: list[tuple[int, str]], asks: int) -> list[str]:
    """``_outcomes`` of ``reindex_collection`` calls, in one MCP session."""
    token = token_create(user=user, name="mcp")[1]

    async def scenario():
        async with http_client(base + "/mcp/", token) as client:
            statuses = []
            for target, profile in [(mine, "fixed 100"), *refused, *[(mine, "fixed 100")] * asks]:
                arguments = {"collection": target, "chunk_profile": profile}
                result = await client.call_tool("reindex_collection", arguments)
                statuses.append(result.structured_content["error"]["status"] if result.is_error else 202)
            return [_outcome(status) for status in statuses]

    return run(scenario)


def _page_ask(user, profiles: dict[str, int]):
    """The collection page's re-index form (the page runs in this process)."""
    page = Client()
    page.force_login(user)

    def ask(collection_id: int, profile: str) -> int:
        form = {"action": "reindex", "chunk_profile": profiles.get(profile, 999_999)}
        return page.post(f"/collections/{collection_id}/settings/", form).status_code

    return ask


def test_a_reindex_costs_one_write_on_mcp_the_api_and_the_page_and_a_refused_one_nothing(
    queueing_server, settings, alice, bob, charlie, fixed_100
):
    throttle_rates(settings, writes=f"{WRITES_PER_HOUR}/hour")  # as the server's, for the page here
    asks = WRITES_PER_HOUR + 1
    expected = ["ok", "refused", "refused", *["ok"] * (WRITES_PER_HOUR - 1), "throttled", "throttled"]
    notes = _collection(alice, "notes", FILES[:1])
    theirs = _collection(charlie, "charlie's", FILES[1:2])

    def refused(mine: int, not_mine: int) -> list[tuple[int, str]]:
        return [(mine, "no such profile"), (not_mine, "fixed 100")]

    document, not_theirs = notes.documents.get().pk, theirs.documents.get().pk
    api = _outcomes(_api_ask(queueing_server, alice), document, refused(document, not_theirs), asks)
    assert api == expected
    bobs = _collection(bob, "bob's", FILES[2:]).pk
    assert _mcp_outcomes(queueing_server, bob, bobs, refused(bobs, theirs.pk), asks) == expected
    # Charlie's page asks: an empty collection of his (nothing to process here), and Alice's.
    empty = collection_create(name="charlie's empty", owner=charlie).pk
    page = _page_ask(charlie, {"fixed 100": fixed_100.pk})
    assert _outcomes(page, empty, refused(empty, notes.pk), asks) == expected
