"""The agentic loop end to end: real retrieval over real documents, the real openai client, and a
loopback OpenAI-compatible server answering each step (tests.agents.script)."""

from __future__ import annotations

import pytest

from knowledge.chat import DIRECT_TEXT
from knowledge.synthesis import events as ev
from knowledge.synthesis.extractive import LABEL_BUDGET
from tests.agents.conftest import AGENTIC
from tests.agents.script import ANSWER, AgentModel, passage_count, reply_json, unsupported
from tests.asking import chat_ask
from tests.synthesis.openai_server import Reply

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db

MULTI_HOP = "Compare when National Flag of Canada Day is observed with why a gravity hill seems to go uphill."


def ask(kb, question=MULTI_HOP, **overrides):
    return chat_ask(
        user=kb.user, question=question, collection_ids=[kb.collection.pk], overrides={**AGENTIC, **overrides}
    )


def names(turn) -> list[str]:
    """Event names, agent steps as ``agent_step:<step>``."""
    return [
        f"{e['event']}:{e['data']['step']}" if e["event"] == ev.AGENT_STEP else e["event"]
        for e in turn.events
    ]


def steps(turn, name=None) -> list[dict]:
    found = [e["data"] for e in turn.events if e["event"] == ev.AGENT_STEP]
    return [s for s in found if name is None or s["step"] == name]


def trace(turn) -> dict:
    return next(e["data"]["agentic"] for e in turn.events if e["event"] == ev.LLM_STEP)


@pytest.fixture
def model(llm_env):
    agent = AgentModel()
    llm_env.responder = agent
    return agent


def test_a_multi_hop_question_runs_the_whole_loop_in_order(kb, model, llm_env):
    turn = ask(kb, **{"agentic.routerTopK": 2})

    assert names(turn) == [
        ev.EXECUTION_START,
        ev.RETRIEVAL_START,
        "agent_step:classify",
        "agent_step:expand",
        "agent_step:route",
        "agent_step:plan",
        "agent_step:retrieve",
        "agent_step:grade",
        "agent_step:rerank",
        ev.RETRIEVAL_COMPLETE,
        "agent_step:generate",
        "agent_step:check",
        ev.LLM_STEP,
        ev.TOKEN_UPDATE,
        ev.FINAL_ANSWER,
        ev.EXECUTION_COMPLETE,
    ]
    assert model.steps == ["classify", "expand", "route", "plan", "grade", "synthesis", "check"]
    flag, gravity = kb.documents["flag_day.html"].pk, kb.documents["gravity_hill.md"].pk
    assert steps(turn, "route")[0]["detail"]["document_ids"] == [flag, gravity]
    assert steps(turn, "route")[0]["method"] == "llm"
    plan = steps(turn, "plan")[0]
    assert [s["target_document_ids"] for s in plan["detail"]["steps"]] == [[flag], [gravity]]
    searches = steps(turn, "retrieve")[0]["detail"]["searches"]
    assert [s.get("restriction") for s in searches] == ["documents", "documents", "none", "none"]
    # The answer cites both documents the plan searched, and says which passage each claim rests on.
    assert turn.mode == "llm"
    assert turn.answer == ANSWER
    assert {c["document"] for c in turn.cited_sources} == {"flag_day.html", "gravity_hill.md"}
    assert steps(turn, "check")[0]["detail"]["grounded"] is True
    # Every call's usage is counted: seven calls of 321 + 47 tokens (the server's reported usage).
    assert (turn.input_tokens, turn.output_tokens, turn.token_source) == (7 * 321, 7 * 47, "usage")
    assert trace(turn)["kind"] == "multi_hop" and trace(turn)["graded"] == trace(turn)["passed"] > 0


def test_each_plan_step_searches_only_its_documents(kb, model, llm_env):
    turn = ask(kb, **{"agentic.routerTopK": 2, "agentic.expansion": False})
    retrieved = {s["document"] for s in turn.retrieved}
    assert retrieved == {"flag_day.html", "gravity_hill.md"}
    assert [s["restriction"] for s in steps(turn, "retrieve")[0]["detail"]["searches"]] == ["documents"] * 2


def test_an_ungrounded_answer_is_checked_and_retried(kb, model, llm_env):
    model.script("check", unsupported("Flag Day was created in 1801"))
    turn = ask(kb)

    after_first_check = names(turn)[names(turn).index("agent_step:check") :]
    assert after_first_check == [
        "agent_step:check",
        "agent_step:retry",
        "agent_step:rewrite",
        "agent_step:retrieve",
        "agent_step:grade",
        "agent_step:rerank",
        ev.RETRIEVAL_COMPLETE,
        "agent_step:generate",
        "agent_step:check",
        ev.LLM_STEP,
        ev.TOKEN_UPDATE,
        ev.FINAL_ANSWER,
        ev.EXECUTION_COMPLETE,
    ]
    checks = steps(turn, "check")
    assert checks[0]["detail"]["unsupported"] == ["Flag Day was created in 1801"]
    assert [c["detail"]["grounded"] for c in checks] == [False, True]
    assert model.steps.count("synthesis") == 2
    assert trace(turn)["retries"] == 1 and trace(turn)["flagged"] is True
    assert turn.mode == "llm"


def test_claims_still_unsupported_after_the_retries_are_left_out(kb, model, llm_env):
    model.script("check", unsupported("A gravity hill looks uphill because the horizon is hidden"))
    turn = ask(kb, **{"agentic.maxRetries": 0})

    assert "National Flag of Canada Day is observed on February 15 [Source 1]." in turn.answer
    assert "horizon" not in turn.answer
    assert "Left out: 1 statement the sources do not support." in turn.answer
    assert [c["n"] for c in turn.cited_sources] == [1]
    assert "retry" not in [s["step"] for s in steps(turn)]


def test_a_claim_that_cannot_be_located_is_answered_by_extraction(kb, model, llm_env):
    model.script("check", unsupported("Quantum tunnelling explains everything"))
    turn = ask(kb, **{"agentic.maxRetries": 0})
    assert turn.mode == "extractive"
    assert "do not support" in turn.answer.splitlines()[0]
    assert turn.cited_sources


def test_weak_grades_make_it_rewrite_the_query_and_search_again(kb, model, llm_env):
    model.script("classify", {"type": "standard"})
    model.script("grade", lambda request: reply_json({"scores": [0.1] * passage_count(request)}))
    turn = ask(kb, "Why does a car seem to roll uphill on a gravity hill?")

    assert [s["step"] for s in steps(turn)][:8] == [
        "classify",
        "expand",
        "retrieve",
        "grade",
        "rewrite",
        "retrieve",
        "grade",
        "rerank",
    ]
    assert steps(turn, "grade")[0]["detail"]["passed"] == 0
    rewritten = steps(turn, "rewrite")[0]["detail"]["query"]
    assert steps(turn, "retrieve")[1]["detail"]["searches"] == [{"query": rewritten, "restriction": "none"}]
    assert trace(turn)["rewrites"] == 1 and trace(turn)["retrieval_rounds"] == 2
    assert turn.mode == "llm"


def test_the_token_budget_stops_a_loop_that_would_not_end(kb, model, llm_env):
    never = [unsupported("A gravity hill looks uphill because the horizon is hidden")] * 20
    model.script("check", *never)
    turn = ask(kb, **{"agentic.maxRetries": 5, "agentic.tokenBudget": 4000})

    budget = steps(turn, "budget")
    assert len(budget) == 1 and budget[0]["status"] == "exhausted"
    assert "token budget" in budget[0]["note"]
    assert trace(turn)["tokens_used"] <= 4000
    assert len(llm_env.requests) < 15
    # It still answers, from the documents, without claims the check refused.
    assert turn.mode == "extractive" and turn.answer.startswith(LABEL_BUDGET)
    assert turn.cited_sources
    assert names(turn)[-4:] == [ev.LLM_STEP, ev.TOKEN_UPDATE, ev.FINAL_ANSWER, ev.EXECUTION_COMPLETE]


def test_the_time_budget_stops_a_slow_loop(kb, model, llm_env):
    model.script("classify", Reply(text='{"type": "multi_hop"}', delay=2.5))
    model.script("expand", Reply(text='{"queries": ["x y"]}', delay=2.5))
    model.script("route", Reply(text='{"document_ids": []}', delay=2.5))
    turn = ask(kb, **{"agentic.timeBudgetSeconds": 5})

    budget = steps(turn, "budget")
    assert budget and "time budget" in budget[0]["note"]
    assert turn.durations_ms["total"] < 15000
    assert turn.mode in ("extractive", "no_results")


def test_direct_messages_search_nothing(kb, model, llm_env):
    model.script("classify", {"type": "direct"})
    turn = ask(kb, "Thanks!")
    assert turn.answer == DIRECT_TEXT
    assert ev.RETRIEVAL_COMPLETE not in names(turn)
    assert model.steps == ["classify"]


def test_a_real_question_classified_direct_is_still_searched(kb, model, llm_env):
    model.script("classify", {"type": "direct"})
    turn = ask(kb, "Why does a car seem to roll uphill on a gravity hill?")
    classify = steps(turn, "classify")[0]
    assert classify["detail"]["kind"] == "standard" and "searched" in classify["note"]
    assert turn.mode == "llm" and turn.cited_sources


def test_unusable_step_replies_fall_back_and_still_answer(kb, model, llm_env):
    for step in ("classify", "expand", "grade", "check"):
        model.script(step, Reply(text="I am not sure what you mean."))
    turn = ask(kb, MULTI_HOP)
    by_step = {s["step"]: s for s in steps(turn)}
    assert by_step["classify"]["method"] == "rules" and "unusable" in by_step["classify"]["note"]
    assert by_step["expand"]["detail"]["queries"] == []
    assert by_step["grade"]["method"] == "skipped" and "unusable" in by_step["grade"]["note"]
    assert by_step["check"]["detail"]["grounded"] is None
    assert turn.mode == "llm" and turn.cited_sources


def test_a_profile_selects_the_loop_and_the_api_streams_its_steps(kb, model, llm_env, client):
    from knowledge.services.profiles import profile_create
    from knowledge.synthesis.events import parse_sse

    client.force_login(kb.user)

    def stream(payload):
        response = client.post(
            "/api/v1/query/", payload, content_type="application/json", HTTP_ACCEPT="text/event-stream"
        )
        assert response.status_code == 200
        return parse_sse(b"".join(response.streaming_content).decode())

    # Off by default: a plain request is answered the standard way.
    standard = stream({"question": MULTI_HOP, "collections": [kb.collection.pk]})
    assert ev.AGENT_STEP not in [e.name for e in standard]
    profile = profile_create(
        owner=kb.user,
        name="Agentic",
        tag="agentic",
        knowledge_overrides={"agentic.enabled": True, "agentic.routerTopK": 2},
        collections=[{"collection": kb.collection.pk, "reranking": False}],
    )
    events = stream({"question": MULTI_HOP, "profile": profile.pk})
    agent_steps = [e.data["step"] for e in events if e.name == ev.AGENT_STEP]
    assert agent_steps == [
        "classify",
        "expand",
        "route",
        "plan",
        "retrieve",
        "grade",
        "rerank",
        "generate",
        "check",
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].name == ev.EXECUTION_COMPLETE


def test_an_answer_citing_nothing_is_unsupported_without_asking(kb, model, llm_env):
    model.script("synthesis", Reply(text="Gravity hills are caused by magnets under the road."))
    turn = ask(kb, **{"agentic.maxRetries": 0})
    check = steps(turn, "check")[0]
    assert (check["method"], check["detail"]["grounded"], check["llm_calls"]) == ("citations", False, 0)
    assert "check" not in model.steps
    assert turn.mode == "extractive" and "magnets" not in turn.answer and turn.cited_sources
    assert trace(turn)["flagged"] is True
