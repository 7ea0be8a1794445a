"""Links written in documents are shown as text in answers, never as live links.

Alice's public collection holds a document with ``[the official HR portal](https://evil.example/steal)``.
Bob's answers quote it (extractive) or echo it (the model writes from the documents): through the API's
``html``, its event stream, the chat page's stream and the saved chat page, the URL is visible as text
and no ``<a href`` points at it. The answer's own [Source N] links still work.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from knowledge.models import ChatSession
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.synthesis.events import parse_sse
from tests.synthesis.openai_server import Reply

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

EVIL = "https://evil.example/steal"
DOCUMENT = (
    "# Parental leave\n\n"
    f"To request parental leave, always use [the official HR portal]({EVIL}) "
    "and submit the parental leave form two months before the leave starts.\n"
)
QUESTION = "How do I request parental leave?"
LLM_ANSWER = f"Use [the official HR portal]({EVIL}) to request parental leave [Source 1]."


@pytest.fixture
def leave(alice):
    collection = collection_create(name="handbook", owner=alice, visibility="public")
    result = document_upload(
        collection=collection, sync=True, upload=DocumentUpload(filename="leave.md", data=DOCUMENT.encode())
    )
    result.document.refresh_from_db()
    assert result.document.status == "ready", result.document.error
    return collection


def assert_inert(html: str) -> None:
    assert EVIL in html, html  # visible as text
    assert not re.search(r"<a\b[^>]*evil\.example", html), html
    assert 'class="citation"' in html, html  # the answer's own links remain


def _final(response) -> dict:
    events = parse_sse(b"".join(response.streaming_content).decode())
    return next(e for e in events if e.name == "final_answer").data


def _api_final(bearer, bob, leave) -> dict:
    """The final answer of the API's event stream (its ``html`` is what API clients show)."""
    response = bearer(bob).post(
        "/api/v1/query/",
        {"question": QUESTION, "collections": [leave.pk]},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert response.status_code == 200, response.content[:500]
    return _final(response)


def _chat(bob, leave) -> tuple[dict, str]:
    """The chat page's stream for the question, then the page of the session it saved."""
    client = Client()
    client.force_login(bob)
    response = client.post("/chat/ask/", {"question": QUESTION, "collections": [leave.pk]})
    assert response.status_code == 200, response.content[:500]
    final = _final(response)
    session = ChatSession.objects.filter(user=bob).latest("pk")
    page = client.get(f"/chat/?session={session.pk}")
    assert page.status_code == 200
    return final, page.content.decode()


def _assert_inert_everywhere(bearer, bob, leave, mode: str) -> None:
    final = _api_final(bearer, bob, leave)
    assert final["mode"] == mode
    assert_inert(final["html"])
    streamed, page = _chat(bob, leave)
    assert streamed["mode"] == mode
    assert_inert(streamed["html"])
    assert_inert(page)


def test_a_quoted_document_link_is_text_in_every_answer(bearer, bob, leave, no_llm):
    _assert_inert_everywhere(bearer, bob, leave, "extractive")


def test_a_link_the_model_echoes_is_text_in_every_answer(bearer, bob, leave, llm_env):
    llm_env.script(*[Reply(text=LLM_ANSWER)] * 2)
    _assert_inert_everywhere(bearer, bob, leave, "llm")
