"""Upload a real paper through the API, then ask through MCP: the same cited answer as /api/v1/query/."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from knowledge.models import LLMSettings
from knowledge.services.collections import collection_create
from knowledge.synthesis.refusal import CLOSEST_HEADING, NO_RESULTS_TEXT
from tests.conftest import CORPUS
from tests.mcp.conftest import http_client, payload, run

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)

# tests/data/dev_questions.jsonl q7: the answer (22.98% and 32.21%) is on page 9 of pasa.pdf.
QUESTION = "How much recall is lost if the crawler can't follow citations (no [Expand] action)?"
ANSWER_PAGE = "page=9"


@pytest.fixture
def papers(alice, token_for):
    """Alice's collection holding pasa.pdf, uploaded through the REST API; her token and API client."""
    token = token_for(alice)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    collection = collection_create(name="papers", owner=alice)
    with open(CORPUS / "pdf" / "pasa.pdf", "rb") as handle:
        uploaded = api.post(
            f"/api/v1/collections/{collection.pk}/documents/", {"file": handle}, format="multipart"
        )
    assert uploaded.status_code == 201, uploaded.content
    assert api.get(f"/api/v1/documents/{uploaded.json()['id']}/").json()["status"] == "ready"
    return collection, token, api


def _ask_both(live_mcp, papers) -> tuple[dict, dict]:
    collection, token, api = papers
    arguments = {"question": QUESTION, "collections": [collection.pk]}
    rest = api.post("/api/v1/query/", arguments, format="json")
    assert rest.status_code == 200, rest.content

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            return payload(await client.call_tool("answer_research_question", arguments))

    return rest.json(), run(scenario)


def _cited(body: dict) -> list[tuple[str, str]]:
    return [(c["document"], c["source_ref"]) for c in body["citations"]]


def _same_answer(rest: dict, mcp: dict, base: str) -> None:
    assert mcp["mode"] == rest["mode"]
    assert mcp["answer"] == rest["answer"]
    assert _cited(mcp) == _cited(rest)
    assert [c["url"] for c in mcp["citations"]] == [base + c["url"] for c in rest["citations"]]
    assert [s["chunk_id"] for s in mcp["sources"]] == [s["chunk_id"] for s in rest["sources"]]
    assert mcp["session"] != rest["session"]  # each asked in its own session


def test_extractive_answer_cites_the_right_page_as_the_rest_api_does(live_mcp, papers, no_llm):
    rest, mcp = _ask_both(live_mcp, papers)
    assert mcp["mode"] == "extractive"
    assert _cited(mcp)[0] == ("pasa.pdf", ANSWER_PAGE)
    assert "[Expand]" in mcp["answer"] and "[Source 1]" in mcp["answer"]
    _same_answer(rest, mcp, base=f"http://127.0.0.1:{live_mcp.port}")


def test_llm_answer_through_mcp_matches_the_rest_api(live_mcp, papers, llm_server, no_llm):
    # Configured in the database, so the running server and this process use the same endpoint.
    LLMSettings(base_url=llm_server.url, api_key="test-key", model="test-model", max_retries=0).save()
    llm_server.default.text = "Recall drops by 22.98% on AutoScholarQuery [Source 1]."
    rest, mcp = _ask_both(live_mcp, papers)
    assert mcp["mode"] == "llm" and mcp["answer"] == llm_server.default.text
    assert _cited(mcp)[0] == ("pasa.pdf", ANSWER_PAGE)
    _same_answer(rest, mcp, base=f"http://127.0.0.1:{live_mcp.port}")
    first, second = llm_server.requests  # one synthesis call each, with the same prompt and context
    assert first.messages == second.messages


def _call(live_mcp, papers, tool: str, question: str) -> dict:
    collection, token, _api = papers

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            return payload(
                await client.call_tool(tool, {"question": question, "collections": [collection.pk]})
            )

    return run(scenario)


def test_the_split_size_question_leads_with_the_figure(live_mcp, papers, no_llm):
    question = "How many query-paper pairs are in the AutoScholarQuery training split?"
    body = _call(live_mcp, papers, "answer_research_question", question)
    first_quote = body["answer"].split("\n\n", 1)[1].splitlines()[0]
    assert body["mode"] == "extractive"
    assert "33,511" in first_quote or "33,551" in first_quote, body["answer"]


@pytest.mark.parametrize("tool", ["answer_research_question", "agentic_research_question"])
def test_both_answer_tools_refuse_what_the_paper_does_not_cover(live_mcp, papers, no_llm, tool):
    body = _call(live_mcp, papers, tool, "What is the boiling point of liquid mercury?")
    assert body["mode"] == "no_results" and body["citations"] == []
    assert body["answer"].startswith(NO_RESULTS_TEXT)
    assert CLOSEST_HEADING in body["answer"] and "- pasa.pdf, p. " in body["answer"]
