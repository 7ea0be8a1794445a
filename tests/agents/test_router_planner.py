"""Router, planner and restricted step retrieval: exact ids only, validated plans, fallbacks, access."""

from __future__ import annotations

import pytest

from knowledge.agents.budget import Budget, ask
from knowledge.agents.planner import plan
from knowledge.agents.router import route
from knowledge.clients.embedding import embed_query
from knowledge.clients.llm import llm_config
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.synthesis import events as ev
from tests.agents.conftest import AGENTIC
from tests.agents.script import AgentModel
from tests.asking import chat_ask, request_for
from tests.synthesis.openai_server import Reply

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db

GRAVITY = "Why does a car seem to roll uphill on a gravity hill?"


@pytest.fixture
def model(llm_env):
    agent = AgentModel()
    llm_env.responder = agent
    return agent


def budgeted_ask():
    from functools import partial

    return partial(ask, llm_config(), Budget(60, 100000))


def route_for(kb, question=GRAVITY, top_k=2, asker=None):
    return route(
        question=question,
        vector=embed_query(question),
        user=kb.user,
        collection_ids=[kb.collection.pk],
        top_k=top_k,
        ask=asker,
    )


def test_the_router_keeps_only_listed_ids_never_invented_names(kb, model):
    gravity = kb.documents["gravity_hill.md"].pk
    model.script("route", {"document_ids": [999999, "made_up.pdf", str(gravity), gravity, True]})
    routed = route_for(kb, asker=budgeted_ask())
    assert routed.method == "llm"
    assert routed.document_ids == [gravity]
    assert routed.dropped_ids == [999999, "made_up.pdf", True]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(text="The gravity hill page, I think."),
        Reply(text='{"document_ids": ["made_up.pdf"]}'),
        Reply(status=500),
    ],
)
def test_bad_router_output_falls_back_to_summary_similarity(kb, model, reply):
    model.script("route", reply, reply)  # twice: the client retries a 500 once
    routed = route_for(kb, asker=budgeted_ask())
    assert routed.method == "embedding" and routed.note
    assert routed.document_ids[0] == kb.documents["gravity_hill.md"].pk
    assert len(routed.document_ids) == 2


def test_without_an_llm_the_router_ranks_documents_by_their_summaries(kb, no_llm):
    routed = route_for(kb, "When is National Flag of Canada Day observed?", top_k=1)
    assert (routed.method, routed.document_ids) == ("embedding", [kb.documents["flag_day.html"].pk])
    assert route_for(kb, top_k=10).method == "all"


def test_the_router_sees_only_documents_the_user_may_read(kb, no_llm, make_user):
    charlie = make_user("charlie-router")
    own = collection_create(name="charlie's", owner=charlie)
    routed = route(
        question=GRAVITY,
        vector=embed_query(GRAVITY),
        user=charlie,
        collection_ids=[kb.collection.pk, own.pk],
        top_k=3,
        ask=None,
    )
    assert routed.document_ids == [] and routed.method == "none"


def test_the_planner_validates_steps_and_falls_back_to_one_step(kb, model):
    gravity, flag = kb.documents["gravity_hill.md"].pk, kb.documents["flag_day.html"].pk
    documents = [(gravity, "gravity_hill.md", "about hills"), (flag, "flag_day.html", "about a flag")]
    model.script(
        "plan",
        {"steps": [{"query": "hill slope", "target_documents": [gravity, 424242]}] * 6},
        {"steps": []},
        Reply(text="First search the hill document."),
    )
    made = plan(question=GRAVITY, documents=documents, max_steps=4, ask=budgeted_ask())
    assert made.method == "llm" and len(made.steps) == 4 and "over the limit" in made.note
    assert made.steps[0].target_document_ids == [gravity] and 424242 in made.dropped_ids
    assert made.steps[0].description == "hill slope"
    for _ in range(2):
        fallback = plan(question=GRAVITY, documents=documents, max_steps=4, ask=budgeted_ask())
        assert fallback.method == "single_step" and "unusable" in fallback.note
        assert [(s.query, s.target_document_ids) for s in fallback.steps] == [(GRAVITY, [gravity, flag])]


def test_restricted_retrieval_filters_inside_the_search(kb, no_llm, make_user):
    flag = kb.documents["flag_day.html"].pk
    both = "On which day is Flag Day observed, and why does a gravity hill look uphill?"

    def search(user, document_ids=None, collection=kb.collection):
        return retrieve(
            user=user,
            request=request_for(
                user,
                question=both,
                collection_ids=[collection.pk],
                document_ids=document_ids,
                overrides={"maxDocs": 6},
            ),
        ).primary_chunks

    assert "gravity_hill.md" in {c.chunk.document.filename for c in search(kb.user)}
    restricted = search(kb.user, [flag])
    assert restricted and {c.chunk.document_id for c in restricted} == {flag}
    # A restriction narrows the scope; naming another's document from one's own collection never widens it.
    outsider = make_user("outsider")
    assert not search(outsider, [flag], collection=collection_create(name="own", owner=outsider))


def test_a_step_whose_documents_hold_nothing_searches_everything(kb, model):
    docx = kb.documents["dummy.docx"].pk
    model.script("classify", {"type": "multi_hop"})
    model.script("route", {"document_ids": [docx]})
    model.script(
        "plan", {"steps": [{"query": "gravity hill car rolls uphill illusion", "target_documents": [docx]}]}
    )
    turn = chat_ask(
        user=kb.user,
        question=GRAVITY,
        collection_ids=[kb.collection.pk],
        overrides={**AGENTIC, "agentic.routerTopK": 1},
    )
    retrieve_step = next(e["data"] for e in turn.events if e["data"].get("step") == "retrieve")
    assert retrieve_step["detail"]["searches"][0]["restriction"] == "whole_scope"
    assert "gravity_hill.md" in {s["document"] for s in turn.retrieved}


def test_without_an_llm_the_loop_falls_back_and_answers_by_extraction(kb, no_llm):
    question = (
        "Compare when National Flag of Canada Day is observed with why a gravity hill seems to go uphill."
    )
    turn = chat_ask(user=kb.user, question=question, collection_ids=[kb.collection.pk], overrides=AGENTIC)
    agent = {e["data"]["step"]: e["data"] for e in turn.events if e["event"] == ev.AGENT_STEP}
    assert list(agent) == [
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
    assert agent["classify"]["method"] == "rules" and agent["classify"]["detail"]["kind"] == "multi_hop"
    assert agent["expand"]["method"] == "skipped"
    assert agent["route"]["method"] == "embedding"
    assert set(agent["route"]["detail"]["document_ids"]) <= {d.pk for d in kb.documents.values()}
    assert agent["plan"]["method"] == "single_step" and len(agent["plan"]["detail"]["steps"]) == 1
    assert agent["grade"]["method"] == "skipped"
    assert agent["check"]["method"] == "verbatim" and agent["check"]["detail"]["grounded"] is True
    assert all(e["data"]["llm_calls"] == 0 for e in turn.events if e["event"] == ev.AGENT_STEP)
    assert turn.mode == "extractive" and turn.cited_sources
    # One search per routed document: both halves of the question reach the context ...
    assert agent["retrieve"]["detail"]["searches"][0]["restriction"] == "documents"
    assert {"flag_day.html", "gravity_hill.md"} <= {s["document"] for s in turn.retrieved}
    # ... and the extracted answer quotes each document it found.
    assert {c["document"] for c in turn.cited_sources} == {"flag_day.html", "gravity_hill.md"}


def test_knowledge_ask_runs_the_loop_with_set(kb, no_llm):
    import io
    import json

    from django.core.management import CommandError, call_command

    out, err = io.StringIO(), io.StringIO()
    target = ["--collection", kb.collection.name, "--user", kb.user.username]
    call_command("knowledge_ask", *target, "--set", "agentic.enabled=true", GRAVITY, stdout=out, stderr=err)
    assert "[classify (rules)" in err.getvalue() and "[check (verbatim)" in err.getvalue()
    assert "mode: extractive" in out.getvalue()
    out = io.StringIO()
    call_command("knowledge_ask", *target, "--json", GRAVITY, stdout=out)
    assert "agent_step" not in json.loads(out.getvalue())["events"]
    with pytest.raises(CommandError, match="agentic.enabled must be true or false"):
        call_command("knowledge_ask", *target, "--set", "agentic.enabled=maybe", GRAVITY)
