"""POST /api/v1/query/ without a language model: the first quote is the sentence that answers, from
whichever of the top passages holds it, and a sentence that introduces a list is quoted with it.

A new user's trial: the passage that answered was retrieved second or third, and the answer quoted
the first passage's best sentence instead (a rule about discharges over 15 years old for "how long
does it take", a sentence about visual debugging for "what can't pdfplumber do"); a sentence ending
"... features pdfplumber does not provide:" was quoted without the features. Real ingestion of two
real documents (pdfplumber's README, a form's instructions), real retrieval, real embeddings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from tests.ingested import ingested_collection

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data"
# pdfplumber 0.11.10's README (MIT), and a discharge-review form's instructions in the usual shape:
# eligibility rules with figures first, the burden estimate (agency disclosure notice) further down.
FILES = (DATA / "pdfplumber_README.md", DATA / "discharge_review_instructions.md")
QUOTE_LINE = re.compile(r'^- "(.+)" \[Source (\d+)\]$', re.MULTILINE)


@pytest.fixture(scope="module")
def trial(django_db_setup, django_db_blocker):
    with (
        django_db_blocker.unblock(),
        ingested_collection(username="trial-user", name="trial", files=FILES) as made,
    ):
        yield made


def ask(trial, question: str) -> dict:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=trial.user, name='tests')[1]}")
    response = client.post(
        "/api/v1/query/", {"question": question, "collections": [trial.collection.pk]}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "extractive", body["answer"]
    return body


def first_quote(body: dict) -> tuple[str, dict]:
    """The first quoted sentence and the retrieved source it cites."""
    quoted = QUOTE_LINE.findall(body["answer"])
    assert quoted, body["answer"]
    text, number = quoted[0]
    return text, next(s for s in body["sources"] if s["n"] == int(number))


def source_number(body: dict, source_ref: str) -> int:
    return next(s["n"] for s in body["sources"] if s["source_ref"] == source_ref)


def test_how_long_is_answered_by_the_duration_in_the_second_passage(trial, no_llm):
    body = ask(trial, "How long does it take on average to fill in the application?")
    # The case: retrieval ranks a passage of rules with figures of their own above the estimate.
    assert source_number(body, "heading=Agency disclosure notice") > 1, body["sources"]
    text, source = first_quote(body)
    assert source["source_ref"] == "heading=Agency disclosure notice", body["answer"]
    assert "about 30 minutes" in text


def test_what_a_library_cannot_do_is_quoted_from_a_later_passage_with_its_list(trial, no_llm):
    body = ask(trial, "What can't pdfplumber do?")
    assert source_number(body, "heading=Comparison to other libraries") > 1, body["sources"]
    text, source = first_quote(body)
    assert source["source_ref"] == "heading=Comparison to other libraries", body["answer"]
    # The sentence that announces the list, and the list, verbatim (white space collapsed).
    assert text == (
        "It's also helpful to know what features `pdfplumber` does __not__ provide: "
        "- PDF *generation* - PDF *modification* - Optical character recognition (OCR) "
        "- Strong support for extracting tables from OCR'ed documents"
    ), body["answer"]
