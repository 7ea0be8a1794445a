"""Questions per day and LLM tokens per month: the chat page, POST /api/v1/query/ (JSON and
streamed), the LLM (the loopback OpenAI-compatible server), the ledger, and the usage figures.
Over a quota: 429 with the figures, before any turn is saved or any LLM call is made."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from knowledge.models import ChatSession, ChatTurn, Chunk, Document, UsageDay
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.synthesis.events import parse_sse
from tests.api.conftest import bearer  # noqa: F401 (a fixture)
from tests.quotas.conftest import limit, note

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


@pytest.fixture
def hills(alice, corpus):
    collection = collection_create(name="hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document_upload(
        collection=collection,
        uploaded_by=alice,
        upload=DocumentUpload(filename=path.name, data=path.read_bytes()),
    )
    return collection


def ask_api(client, collection, **headers):
    return client.post(
        "/api/v1/query/", {"question": QUESTION, "collections": [collection.pk]}, format="json", **headers
    )


def test_the_chat_page_refuses_the_question_over_the_daily_quota(
    client, alice, hills, no_llm, no_default_quotas
):
    limit(alice, questions_per_day=1)
    client.force_login(alice)
    first = client.post("/chat/ask/", {"question": QUESTION, "collections": [hills.pk]})
    assert first.status_code == 200
    assert parse_sse(b"".join(first.streaming_content).decode())[-1].name == "execution_complete"
    second = client.post(
        "/chat/ask/", {"question": QUESTION, "collections": [hills.pk]}, HTTP_ACCEPT="text/event-stream"
    )
    assert second.status_code == 429
    assert second.json() == {"error": "question quota reached: 1 of 1 questions used today"}
    assert ChatTurn.objects.filter(session__user=alice).count() == 1


def test_the_api_query_refuses_with_429_and_the_figures(bearer, alice, hills, no_llm, no_default_quotas):  # noqa: F811
    limit(alice, questions_per_day=2)
    client = bearer(alice)
    assert ask_api(client, hills).status_code == 200
    streamed = ask_api(client, hills, HTTP_ACCEPT="text/event-stream")
    assert streamed.status_code == 200
    assert parse_sse(b"".join(streamed.streaming_content).decode())[-1].name == "execution_complete"
    for headers in ({}, {"HTTP_ACCEPT": "text/event-stream"}):
        response = ask_api(client, hills, **headers)
        assert response.status_code == 429, response.content
        if not headers:
            assert response.json()["error"] == {
                "status": 429,
                "code": "quota_exceeded",
                "message": "question quota reached: 2 of 2 questions used today",
                "quota": "questions_per_day",
                "limit": 2,
                "used": 2,
            }
    assert ChatTurn.objects.filter(session__user=alice).count() == 2
    assert UsageDay.objects.get(user=alice).questions == 2


def test_llm_tokens_are_counted_and_the_month_quota_stops_the_next_call(
    bearer,  # noqa: F811
    alice,
    hills,
    llm_env,
    no_default_quotas,
):
    limit(alice, llm_tokens_per_month=300)
    client = bearer(alice)
    first = ask_api(client, hills)
    assert first.status_code == 200 and first.json()["mode"] == "llm"
    turn = ChatTurn.objects.get(session__user=alice)
    spent = turn.input_tokens + turn.output_tokens
    assert spent >= 321 + 47  # the loopback server's reported usage for the answer
    assert UsageDay.objects.get(user=alice).llm_tokens == spent
    calls = len(llm_env.requests)
    second = ask_api(client, hills)
    assert second.status_code == 429
    assert (
        second.json()["error"]["message"] == f"LLM token quota reached: {spent} of 300 tokens used this month"
    )
    assert (second.json()["error"]["quota"], second.json()["error"]["used"]) == (
        "llm_tokens_per_month",
        spent,
    )
    assert len(llm_env.requests) == calls  # refused before the LLM was called
    assert UsageDay.objects.get(user=alice).questions == 1


def test_extracted_answers_spend_no_llm_tokens(bearer, alice, hills, no_llm, no_default_quotas):  # noqa: F811
    assert ask_api(bearer(alice), hills).status_code == 200
    assert ChatTurn.objects.get(session__user=alice).input_tokens > 0  # an estimate, shown to the user
    assert UsageDay.objects.get(user=alice).llm_tokens == 0


def test_the_ledger_survives_deleting_the_chat_sessions(bearer, alice, hills, llm_env, no_default_quotas):  # noqa: F811
    limit(alice, questions_per_day=1)
    client = bearer(alice)
    session = ask_api(client, hills).json()["session"]
    assert client.delete(f"/api/v1/sessions/{session}/").status_code == 204
    assert not ChatSession.objects.filter(user=alice).exists()
    usage = client.get("/api/v1/usage/").json()
    assert usage["questions_today"] == {"used": 1, "limit": 1}
    assert usage["llm_tokens_month"]["used"] > 0
    assert ask_api(client, hills).status_code == 429


def test_usage_is_exactly_what_is_stored_in_the_api_format(bearer, alice, bob, hills, settings, no_llm):  # noqa: F811
    settings.KNOWLEDGE_QUOTA_DOCUMENTS = 10
    settings.KNOWLEDGE_QUOTA_BYTES = 5 * 1024 * 1024
    settings.KNOWLEDGE_QUOTA_CHUNKS = None
    settings.KNOWLEDGE_QUOTA_QUESTIONS_PER_DAY = 50
    settings.KNOWLEDGE_QUOTA_LLM_TOKENS_PER_MONTH = None
    name, data = note(0)
    document_upload(collection=hills, uploaded_by=alice, upload=DocumentUpload(filename=name, data=data))
    bobs = collection_create(name="bob's", owner=bob)
    document_upload(
        collection=bobs, uploaded_by=bob, upload=DocumentUpload(filename=note(1)[0], data=note(1)[1])
    )  # not hers
    client = bearer(alice)
    assert ask_api(client, hills).status_code == 200
    documents = Document.objects.filter(uploaded_by=alice)
    assert client.get("/api/v1/usage/").json() == {
        "documents": {"used": documents.count(), "limit": 10},
        "bytes": {"used": documents.aggregate(total=Sum("size"))["total"], "limit": 5 * 1024 * 1024},
        "chunks": {"used": Chunk.objects.filter(document__in=documents).count(), "limit": None},
        "questions_today": {"used": 1, "limit": 50},
        "llm_tokens_month": {"used": 0, "limit": None},
    }
    assert documents.count() == 2


def test_the_usage_page_shows_bars_and_no_limit(client, alice, hills, no_default_quotas):
    limit(alice, documents=4)
    client.force_login(alice)
    page = client.get("/usage/").content.decode()
    assert 'data-quota="documents"' in page and '<meter min="0" max="4"' in page and 'value="1"' in page
    assert page.count("no limit") >= 4  # bytes, chunks, questions, tokens: no limit
    assert 'href="/usage/"' in client.get("/chat/").content.decode()  # in the menu


def test_search_only_is_not_a_question_and_reads_no_quota(bearer, alice, hills, no_default_quotas):  # noqa: F811
    limit(alice, questions_per_day=0)
    client = bearer(alice)
    client.post("/api/v1/retrieve/", {"question": QUESTION, "collections": [hills.pk]}, format="json")
    with CaptureQueriesContext(connection) as queries:
        response = client.post(
            "/api/v1/retrieve/", {"question": QUESTION, "collections": [hills.pk]}, format="json"
        )
    assert response.status_code == 200, response.content
    touched = [q["sql"] for q in queries.captured_queries if "quota" in q["sql"] or "usageday" in q["sql"]]
    assert touched == []
    assert not UsageDay.objects.exists()


def test_a_client_that_leaves_mid_answer_still_spends_the_tokens_it_was_sent(
    alice, hills, llm_env, no_default_quotas
):
    """The LLM reports usage only at its end: an answer cut off by its client is counted from the
    prompt and the text sent, so leaving early is no way around the token quota."""
    from knowledge.synthesis import events as ev
    from tests.asking import chat_stream
    from tests.synthesis.openai_server import Reply

    llm_env.script(
        Reply(text="Gravity hills are optical illusions of the slope around them. " * 20, chunk_delay=0.01)
    )
    stream = chat_stream(user=alice, question=QUESTION, collection_ids=[hills.pk])
    events = iter(stream)
    for event in events:
        if event.name == ev.ANSWER_DELTA:
            break
    events.close()  # the client went away after the first words
    spent = UsageDay.objects.get(user=alice).llm_tokens
    assert spent > 100, "the prompt alone is hundreds of tokens"
