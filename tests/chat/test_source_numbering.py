"""One numbering of citations: an answer's [Source N] is the N-th passage listed beside it.

On the chat page (the live stream and the saved conversation), in the REST API's query response
(``citations`` and ``sources``) and over MCP, on the standard and the agentic path, for answers
extracted from the documents and answers written by an LLM.

Real pieces only: pasa.pdf ingested into PostgreSQL, the real retrieval and extraction, the page and
the API through Django's test clients, the MCP server in process through the SDK's own client, and
for the LLM the loopback OpenAI-compatible server (tests.synthesis.openai_server).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from mcp import Client as McpClient
from rest_framework.test import APIClient

from knowledge.mcp.identity import NamedUserIdentity
from knowledge.mcp.server import build_server
from knowledge.models import ChatSession, Document, Profile
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_delete, document_upload
from knowledge.services.profiles import profile_create
from tests.conftest import CORPUS
from tests.mcp.conftest import no_persistent_connections, payload, run  # noqa: F401 (a fixture)
from tests.synthesis.openai_server import Reply

pytest_plugins = ["tests.synthesis.openai_server"]
# Each test asks over MCP first: its worker thread commits its turn before the test's own transaction
# (the page's and the API's turns, rolled back after the test) takes any row lock it would wait for.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_persistent_connections")]

# Extracted answers to these read pages on: they quote the next chunk of a page retrieved
# (knowledge.retrieval.continuation), a passage retrieval itself did not number; the first on the
# standard path, the second on the agentic one too.
READ_ON_QUESTION = "Which base model were the Crawler and Selector trained from?"
AGENTIC_READ_ON_QUESTION = "What is RealScholarQuery?"
LLM_QUESTION = "What is PaSa and what does it do?"
MARKER = re.compile(r"\[Source (\d+)\]")
CONTEXT_BLOCK = re.compile(r"^=== Source (\d+) ===$", re.MULTILINE)


@pytest.fixture(scope="module")
def kb(django_db_setup, django_db_blocker):
    """pasa.pdf in a reader's collection and an agentic profile over it, committed once for the module:
    the MCP tools run in worker threads, which see committed rows only."""
    with django_db_blocker.unblock():
        reader = get_user_model().objects.create_user("numbering-reader", password="pw-numbering")
        collection = collection_create(name="papers", owner=reader)
        try:
            path = CORPUS / "pdf" / "pasa.pdf"
            document = document_upload(
                collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
            ).document
            document.refresh_from_db()
            assert document.status == Document.Status.READY, document.error
            profile = profile_create(
                owner=reader,
                name="agentic papers",
                tag="agentic",
                knowledge_overrides={"agentic.enabled": True},
                collections=[{"collection": collection.pk, "reranking": False}],
            )
            yield SimpleNamespace(user=reader, collection=collection, profile=profile)
        finally:
            ChatSession.objects.filter(user=reader).delete()
            Profile.objects.filter(owner=reader).delete()
            for document in Document.objects.filter(collection=collection):
                document_delete(document=document)
            collection.delete()
            reader.delete()


def chunk_of(url: str) -> int:
    """The chunk a passage's or a citation's link opens (``?chunk=ID``, absolute or not)."""
    return int(parse_qs(urlsplit(url).query)["chunk"][0])


def assert_one_numbering(answer: str, listed: list[dict], cited: list[dict]) -> None:
    """Every [Source N] of ``answer`` names the N-th of ``listed``; ``cited`` (n, url) are those."""
    numbers = [int(n) for n in MARKER.findall(answer)]
    assert numbers, answer
    assert [s["n"] for s in listed] == list(range(1, len(listed) + 1)), listed
    beyond = sorted({n for n in numbers if not 1 <= n <= len(listed)})
    assert not beyond, f"[Source {beyond}] cited, {len(listed)} passages listed: {answer}"
    assert sorted(c["n"] for c in cited) == sorted(set(numbers))
    for citation in cited:
        assert chunk_of(citation["url"]) == chunk_of(listed[citation["n"] - 1]["url"]), citation


# -- each surface's answer, and the passages it lists beside it ---------------------------------------


def api_answer(user, scope: dict, question: str) -> dict:
    api = APIClient()
    api.force_authenticate(user)
    response = api.post("/api/v1/query/", {"question": question, **scope}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert_one_numbering(body["answer"], body["sources"], body["citations"])
    return body


def mcp_answer(user, scope: dict, question: str, tool: str = "answer_research_question") -> dict:
    server = build_server(NamedUserIdentity(user_id=user.pk, base_url="https://kb.example.test"))

    async def scenario():
        async with McpClient(server) as client:
            return payload(await client.call_tool(tool, {"question": question, **scope}))

    body = run(scenario)
    assert_one_numbering(body["answer"], body["sources"], body["citations"])
    return body


def live_page_answer(user, form: dict, question: str) -> dict:
    """The chat page's stream: what its script lists beside the answer once the answer is final."""
    client = Client()
    client.force_login(user)
    response = client.post("/chat/ask/", {"question": question, **form})
    assert response.status_code == 200
    events = dict(sse_events(b"".join(response.streaming_content).decode()))
    final = events["final_answer"]
    cited = citation_links(final["html"])
    assert_one_numbering(final["text"], final["passages"], cited)
    return final


def saved_page_answer(user, session_id: int) -> None:
    """The conversation as the chat page shows it later: the answer's links and the passages' list."""
    client = Client()
    client.force_login(user)
    page = ChatPage()
    page.feed(client.get(f"/chat/?session={session_id}").content.decode())
    assert_one_numbering("".join(page.answer), page.passages, page.citations)


def sse_events(stream: str):
    for block in stream.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            yield fields["event"], json.loads(fields["data"])


def citation_links(html: str) -> list[dict]:
    page = ChatPage()
    page.feed(html)
    return page.citations


class ChatPage(HTMLParser):
    """The answers' text and [Source N] links, and the "Passages found" items ("[n] title — place")."""

    def __init__(self) -> None:
        super().__init__()
        self.answer: list[str] = []
        self.citations: list[dict] = []
        self.passages: list[dict] = []
        self._in_answer = self._in_item = False
        self._link: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "div" and "answer" in classes:
            self._in_answer = True
        elif tag == "a" and "citation" in classes:
            self.citations.append({"n": int(attributes["data-source"]), "url": attributes["href"]})
        elif tag == "li" and "source-item" in classes:
            self._in_item = True
        elif tag == "a" and self._in_item:
            self._link = attributes["href"]

    def handle_endtag(self, tag):
        if tag == "div":
            self._in_answer = False

    def handle_data(self, data):
        if self._in_answer:
            self.answer.append(data)
        if self._link is not None:
            number = re.match(r"\[(\d+)\]", data.strip())
            self.passages.append({"n": int(number.group(1)), "url": self._link})
            self._link, self._in_item = None, False


# -- the tests ------------------------------------------------------------------------------------------


def read_on(body: dict) -> list[dict]:
    """The listed passages an extracted answer read on into, all of them quoted, listed as such."""
    passages = [s for s in body["sources"] if s["role"] == "continuation"]
    assert {s["n"] for s in passages} <= {c["n"] for c in body["citations"]}
    assert all(s["match"].startswith("read on from [") for s in passages)
    return passages


def test_an_extracted_answer_that_reads_a_page_on_lists_what_it_quotes_under_its_number(kb, no_llm):
    scope = {"collections": [kb.collection.pk]}
    mcp = mcp_answer(kb.user, scope, READ_ON_QUESTION)
    body = api_answer(kb.user, scope, READ_ON_QUESTION)
    assert body["mode"] == "extractive" and read_on(body)  # the case at issue
    assert mcp["answer"] == body["answer"]
    final = live_page_answer(kb.user, {"collections": kb.collection.pk}, READ_ON_QUESTION)
    assert final["text"] == body["answer"]
    saved_page_answer(kb.user, body["session"])


def test_an_llm_answer_cites_only_listed_passages_whatever_numbers_it_writes(kb, llm_env):
    def respond(request):
        last = max(int(n) for n in CONTEXT_BLOCK.findall(request.system))
        return Reply(
            text=f"PaSa is an LLM agent for paper search [Source 1]. It reads papers [Source {last}]. "
            f"It also does something the context never held [Source {last + 1}]."
        )

    llm_env.responder = respond
    scope = {"collections": [kb.collection.pk]}
    assert mcp_answer(kb.user, scope, LLM_QUESTION)["dropped_citations"] == 1
    body = api_answer(kb.user, scope, LLM_QUESTION)
    assert body["mode"] == "llm" and body["dropped_citations"] == 1
    final = live_page_answer(kb.user, {"collections": kb.collection.pk}, LLM_QUESTION)
    assert final["mode"] == "llm" and final["dropped_citations"] == 1
    saved_page_answer(kb.user, body["session"])


def test_the_agentic_path_lists_what_its_answer_numbers(kb, no_llm):
    question, profile = AGENTIC_READ_ON_QUESTION, {"profile": kb.profile.pk}
    agentic = mcp_answer(kb.user, {"collections": [kb.collection.pk]}, question, "agentic_research_question")
    assert agentic["agentic"] is True and read_on(agentic)
    body = api_answer(kb.user, profile, question)
    assert body["mode"] == "extractive" and read_on(body)
    live_page_answer(kb.user, profile, question)
    saved_page_answer(kb.user, body["session"])
