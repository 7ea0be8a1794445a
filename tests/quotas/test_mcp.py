"""The MCP answer tools count questions against the same quota, and report it as a tool error
with the API's figures (a live server over Streamable HTTP)."""

from __future__ import annotations

import pytest

from knowledge.models import ChatTurn, UsageDay
from tests.mcp.conftest import error_text, hills, http_client, live_mcp, payload, run, token_for  # noqa: F401
from tests.quotas.conftest import limit

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


@pytest.mark.parametrize("tool", ["answer_research_question", "agentic_research_question"])
def test_the_answer_tools_refuse_a_question_over_the_daily_quota(live_mcp, alice, token_for, hills, tool):  # noqa: F811
    limit(alice, questions_per_day=1)
    token = token_for(alice)
    arguments = {"question": QUESTION, "collections": [hills.pk]}

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            return await client.call_tool(tool, arguments), await client.call_tool(tool, arguments)

    first, second = run(scenario)
    assert payload(first)["answer"]
    assert error_text(second) == "question quota reached: 1 of 1 questions used today"
    error = second.structured_content["error"]
    assert (error["status"], error["quota"], error["limit"], error["used"]) == (
        429,
        "questions_per_day",
        1,
        1,
    )
    assert ChatTurn.objects.filter(session__user=alice).count() == 1
    assert UsageDay.objects.get(user=alice).questions == 1
