"""POST /api/v1/query/ (JSON and Server-Sent Events) and the sessions endpoints."""

from __future__ import annotations

import html
import re

import pytest

from knowledge.models import ChatTurn
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.synthesis.events import parse_sse
from knowledge.synthesis.refusal import CLOSEST_HEADING, NO_RESULTS_TEXT
from tests.api.conftest import assert_error

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


@pytest.fixture
def hills(alice, corpus):
    collection = collection_create(name="hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    return collection


def test_query_answers_with_citations_and_saves_the_session(alice, bearer, hills, no_llm):
    client = bearer(alice)
    response = client.post("/api/v1/query/", {"question": QUESTION, "collections": [hills.pk]}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "extractive"
    assert body["citations"] and body["citations"][0]["document"] == "gravity_hill.md"
    assert body["citations"][0]["source_ref"].startswith("heading=")
    assert body["tokens"]["source"] == "estimate"
    assert body["events"][0] == "execution_start" and body["events"][-1] == "execution_complete"
    # Each citation links where its sentence is quoted, exactly as the page's citation chips do.
    chips = re.findall(r'href="([^"]+)" data-source="(\d+)"', html.unescape(_final_html(body)))
    for citation in body["citations"]:
        assert "quote=" in citation["url"], citation
        assert (citation["url"], str(citation["n"])) in chips  # the first chip of its source
    session = body["session"]

    follow = client.post("/api/v1/query/", {"question": "Tell me more", "session": session}, format="json")
    assert follow.status_code == 200 and follow.json()["session"] == session
    sessions = client.get("/api/v1/sessions/").json()
    assert sessions["count"] == 1 and sessions["results"][0]["turns"] == 2
    detail = client.get(f"/api/v1/sessions/{session}/").json()
    assert [t["question"] for t in detail["turns"]] == [QUESTION, "Tell me more"]


def _final_html(body) -> str:
    """The answer's HTML as the page showed it (the saved turn's final_answer event)."""
    turn = ChatTurn.objects.get(session_id=body["session"], index=0)
    return next(e["data"]["html"] for e in turn.events if e["event"] == "final_answer")


def test_query_refuses_what_the_documents_do_not_cover_and_names_the_closest_passages(
    alice, bearer, hills, no_llm
):
    question = "What is the boiling point of liquid mercury?"
    response = bearer(alice).post(
        "/api/v1/query/", {"question": question, "collections": [hills.pk]}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "no_results" and body["citations"] == []
    assert body["answer"].startswith(NO_RESULTS_TEXT)
    assert CLOSEST_HEADING in body["answer"] and "- gravity_hill.md, " in body["answer"]
    assert "[Source" not in body["answer"]


def test_query_streams_server_sent_events(alice, bearer, hills, llm_env):
    client = bearer(alice)
    response = client.post(
        "/api/v1/query/",
        {"question": QUESTION, "collections": [hills.pk]},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    events = parse_sse(b"".join(response.streaming_content).decode())
    names = [e.name for e in events if e.name != "answer_delta"]
    assert names == [
        "execution_start",
        "knowledge_retrieval_start",
        "knowledge_retrieval_complete",
        "conversation_llm_step",
        "token_update",
        "final_answer",
        "execution_complete",
    ]
    assert any(e.name == "answer_delta" for e in events)
    final = next(e for e in events if e.name == "final_answer")
    assert final.data["mode"] == "llm" and final.data["sources"][0]["document"] == "gravity_hill.md"


def test_query_refuses_bad_input_and_foreign_ids(alice, charlie, bearer, hills, no_llm):
    client = bearer(alice)
    assert_error(
        client.post("/api/v1/query/", {"question": "x" * 10_000, "collections": [hills.pk]}, format="json"),
        400,
    )
    assert_error(client.post("/api/v1/query/", {"question": "hi"}, format="json"), 400)
    assert_error(client.post("/api/v1/query/", {"question": "hi", "collections": ["a"]}, format="json"), 400)
    session = client.post(
        "/api/v1/query/", {"question": QUESTION, "collections": [hills.pk]}, format="json"
    ).json()["session"]
    other = bearer(charlie)
    assert_error(
        other.post("/api/v1/query/", {"question": QUESTION, "collections": [hills.pk]}, format="json"), 404
    )
    assert_error(other.post("/api/v1/query/", {"question": QUESTION, "session": session}, format="json"), 404)
    assert_error(other.get(f"/api/v1/sessions/{session}/"), 404)
    assert other.get("/api/v1/sessions/").json()["count"] == 0
