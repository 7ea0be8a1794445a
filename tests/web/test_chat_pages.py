"""Chat page streaming, session resume, and the citation viewer (Django test client)."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from knowledge.models import ChatSession, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.synthesis.events import parse_sse
from knowledge.synthesis.refusal import CLOSEST_HEADING, NO_RESULTS_TEXT

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)

ORDER = [
    "execution_start",
    "knowledge_retrieval_start",
    "knowledge_retrieval_complete",
    "conversation_llm_step",
    "token_update",
    "final_answer",
    "execution_complete",
]


@pytest.fixture
def pasa(alice, corpus):
    collection = collection_create(name="papers", owner=alice)
    path = corpus / "pdf" / "pasa.pdf"
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    return collection


def _ask(client, **data) -> list:
    response = client.post("/chat/ask/", data)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "text/event-stream"
    return parse_sse(b"".join(response.streaming_content).decode())


def test_chat_streams_events_in_order_and_resumes_the_session(client, alice, pasa, no_llm):
    client.force_login(alice)
    assert client.get("/chat/").status_code == 200
    events = _ask(
        client, question="How many query-paper pairs does AutoScholarQuery have?", collections=[pasa.pk]
    )
    names = [e.name for e in events if e.name != "answer_delta"]
    assert names == ORDER
    final = next(e for e in events if e.name == "final_answer")
    assert final.data["sources"] and "/view/?chunk=" in final.data["sources"][0]["url"]
    assert "#page=" in final.data["sources"][0]["url"]
    session = ChatSession.objects.get(user=alice)

    page = client.get(f"/chat/?session={session.pk}").content.decode()
    assert "How many query-paper pairs does AutoScholarQuery have?" in page
    follow_up = _ask(client, question="Tell me more about the first one", session=session.pk)
    assert follow_up[-1].name == "execution_complete"
    assert session.turns.count() == 2


def test_the_chat_page_refuses_what_the_paper_does_not_cover_and_names_the_closest_passages(
    client, alice, pasa, no_llm
):
    client.force_login(alice)
    events = _ask(client, question="What is the boiling point of liquid mercury?", collections=[pasa.pk])
    final = next(e for e in events if e.name == "final_answer").data
    assert final["mode"] == "no_results" and final["sources"] == []
    assert final["text"].startswith(NO_RESULTS_TEXT) and CLOSEST_HEADING in final["text"]
    assert "- pasa.pdf, p. " in final["text"] and "[Source" not in final["text"]
    session = ChatSession.objects.get(user=alice)
    page = client.get(f"/chat/?session={session.pk}").content.decode()
    assert CLOSEST_HEADING in page


def test_citation_opens_the_pdf_at_the_cited_page_with_the_passage(client, alice, pasa, no_llm):
    client.force_login(alice)
    events = _ask(
        client, question="How many query-paper pairs are in AutoScholarQuery?", collections=[pasa.pk]
    )
    source = next(e for e in events if e.name == "final_answer").data["sources"][0]
    page = client.get(source["url"].split("#")[0])
    html = page.content.decode()
    assert page.status_code == 200
    assert f'"page": {source["page"]}' in html  # the page the PDF viewer draws
    assert 'class="chunk cited"' in html
    document = Document.objects.get(collection=pasa)
    pdf = client.get(f"/documents/{document.pk}/file/")
    assert pdf.status_code == 200 and b"".join(pdf.streaming_content).startswith(b"%PDF")


def test_other_users_cannot_read_sessions_documents_or_ask_foreign_collections(
    client, alice, charlie, pasa, no_llm
):
    client.force_login(alice)
    _ask(client, question="How many query-paper pairs are in AutoScholarQuery?", collections=[pasa.pk])
    session = ChatSession.objects.get(user=alice)
    document = Document.objects.get(collection=pasa)

    other = Client()
    other.force_login(charlie)
    assert other.get(f"/chat/?session={session.pk}").status_code == 404
    assert other.get(f"/documents/{document.pk}/view/").status_code == 404
    assert other.get(f"/documents/{document.pk}/file/").status_code == 404
    response = other.post(
        "/chat/ask/",
        {"question": "How many query-paper pairs are in AutoScholarQuery?", "collections": [pasa.pk]},
    )
    assert response.status_code == 404
    response = other.post("/chat/ask/", {"question": "What is PaSa?", "session": session.pk})
    assert response.status_code == 404


@pytest.mark.security
def test_the_chat_page_refuses_collections_the_user_may_not_read_like_the_api(alice, charlie):
    """The page used to answer "nothing found" over a foreign collection id; the API said 404."""
    foreign = collection_create(name="alice only", owner=alice)
    mine = collection_create(name="charlie's", owner=charlie)
    page = Client()
    page.force_login(charlie)
    before = ChatSession.objects.count()
    for accept in ("text/event-stream", "application/json"):
        response = page.post(
            "/chat/ask/",
            {"question": "What is in it?", "collections": [mine.pk, foreign.pk]},
            HTTP_ACCEPT=accept,
        )
        assert response.status_code == 404, response.status_code
        assert response.json() == {"error": f"no such collection: {foreign.pk}"}
    api = APIClient()
    api.force_authenticate(charlie)
    from_api = api.post(
        "/api/v1/query/", {"question": "What is in it?", "collections": [mine.pk, foreign.pk]}, format="json"
    )
    assert from_api.status_code == 404 and from_api.json()["error"]["message"] == response.json()["error"]
    for bad in (["abc"], ["99999999999999999999999"], ["-1"]):
        response = page.post(
            "/chat/ask/", {"question": "What is in it?", "collections": bad}, HTTP_ACCEPT="application/json"
        )
        assert response.status_code in (400, 404), (bad, response.status_code)
    assert ChatSession.objects.count() == before  # nothing was started for a refused question


def test_bad_questions_get_a_clear_error(client, alice, pasa):
    client.force_login(alice)
    response = client.post(
        "/chat/ask/", {"question": "", "collections": [pasa.pk]}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400 and "empty" in response.json()["error"]
    response = client.post(
        "/chat/ask/", {"question": "x" * 10_000, "collections": [pasa.pk]}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400
    response = client.post("/chat/ask/", {"question": "hi", "profile": "999"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 404


def test_a_conversation_whose_collections_are_gone_is_refused_in_words_on_the_page_and_the_api(
    alice, bob, no_llm
):
    """Resuming a session after losing access to everything it searched used to answer "nothing on this,
    add documents that cover it"; now the page, the API and MCP's path say what happened."""
    from knowledge.access import SESSION_SCOPE_LOST
    from tests.asking import chat_ask

    hills = collection_create(name="hills", owner=alice)
    turn = chat_ask(user=alice, question="What is a gravity hill?", collection_ids=[hills.pk])
    hills.owner = bob
    hills.save(update_fields=["owner"])
    page = Client()
    page.force_login(alice)
    html = page.get(f"/chat/?session={turn.session_id}").content.decode()
    assert 'id="scope-lost"' in html and "no longer read the collections this conversation searched" in html
    response = page.post(
        "/chat/ask/",
        {"question": "And in Canada?", "session": turn.session_id},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400 and response.json() == {"error": SESSION_SCOPE_LOST}
    api = APIClient()
    api.force_authenticate(alice)
    from_api = api.post(
        "/api/v1/query/", {"question": "And in Canada?", "session": turn.session_id}, format="json"
    )
    assert from_api.status_code == 400 and from_api.json()["error"]["message"] == SESSION_SCOPE_LOST
    # Choosing another collection goes on with the same conversation.
    other = collection_create(name="others", owner=alice)
    events = _ask(page, question="And in Canada?", session=turn.session_id, collections=[other.pk])
    assert events[-1].name == "execution_complete"
    assert ChatSession.objects.get(pk=turn.session_id).turns.count() == 2


def test_the_side_panels_passage_is_the_readers_alone_and_bad_ids_get_a_clear_4xx(
    alice, charlie, pasa, no_llm
):
    from knowledge.models import Chunk

    chunk = Chunk.objects.filter(document__collection=pasa).order_by("index").first()
    url = f"/documents/{chunk.document_id}/passage/"
    owner, other = Client(), Client()
    owner.force_login(alice)
    other.force_login(charlie)
    body = owner.get(url, {"chunk": chunk.pk}, HTTP_ACCEPT="application/json").json()
    assert body["place"] == f"Page {chunk.page}" and any(p["cited"] for p in body["parts"])
    assert other.get(url, {"chunk": chunk.pk}, HTTP_ACCEPT="application/json").status_code == 404
    assert owner.get(url, HTTP_ACCEPT="application/json").status_code == 404  # no passage named
    assert owner.get(url, {"chunk": "abc"}, HTTP_ACCEPT="application/json").status_code == 400
    assert owner.get(url, {"chunk": 99999999}, HTTP_ACCEPT="application/json").status_code == 404
