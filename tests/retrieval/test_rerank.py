"""Per-collection LLM reranking against the loopback OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest

from knowledge.models import ProfileCollection
from knowledge.retrieval.rerank import parse_scores
from knowledge.retrieval.service import retrieve
from tests.asking import request_for
from tests.synthesis.openai_server import Reply

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Which pet operations take an id in the path?"


def test_llm_reorders_the_candidates_and_keeps_max_docs(alice, reranking_profile, llm_env):
    baseline = retrieve(
        user=alice,
        request=request_for(alice, question=QUESTION, profile=reranking_profile, overrides={"maxDocs": 6}),
    )
    pool = [r.chunk.pk for r in baseline.primary_chunks]
    assert len(pool) == 6  # maxDocs 2 x 3 candidates go to the LLM
    llm_env.script(Reply(text=json.dumps({"scores": [0, 1, 2, 3, 4, 10]})))
    context = retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile))
    assert context.stats["rerank"] == "reranked"
    assert [r.chunk.pk for r in context.primary_chunks] == [pool[5], pool[4]]
    assert context.primary_chunks[0].scores["rerank"] == 10
    request = llm_env.requests[-1]
    assert "[6]" in request.messages[-1]["content"] and QUESTION in request.messages[-1]["content"]


@pytest.mark.parametrize(
    "reply",
    [Reply(status=500), Reply(text="I think the third one is best."), Reply(text='{"scores": [1, 2]}')],
)
def test_failed_or_unusable_reranking_keeps_the_retrieval_order(alice, reranking_profile, llm_env, reply):
    baseline = retrieve(
        user=alice,
        request=request_for(alice, question=QUESTION, profile=reranking_profile, overrides={"maxDocs": 2}),
    )
    llm_env.script(reply, reply, reply)
    context = retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile))
    assert context.stats["rerank"].startswith("failed")
    assert [r.chunk.pk for r in context.primary_chunks] == [r.chunk.pk for r in baseline.primary_chunks]


def test_without_an_llm_reranking_is_skipped(alice, reranking_profile, no_llm):
    context = retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile))
    assert context.stats["rerank"].startswith("skipped")
    assert len(context.primary_chunks) == 2


def test_collections_without_the_flag_are_not_reranked(alice, reranking_profile, llm_env):
    ProfileCollection.objects.filter(profile=reranking_profile).update(reranking=False)
    context = retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile))
    assert "rerank" not in context.stats
    assert llm_env.requests == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"scores": [3, 9.5]}', [3.0, 9.5]), ('Sure! {"scores": [1, 2]} done', [1.0, 2.0])],
)
def test_parse_scores(text, expected):
    assert parse_scores(text, expected=2) == expected


@pytest.mark.parametrize(
    "text", ["", "{}", '{"scores": [1]}', '{"scores": ["a", "b"]}', '{"scores": [true, 1]}']
)
def test_parse_scores_refuses_unusable_replies(text):
    with pytest.raises(ValueError):
        parse_scores(text, expected=2)


def test_a_searchs_reranking_spends_the_users_tokens_and_stops_at_their_quota(
    alice, reranking_profile, llm_env, settings
):
    """A search (API /retrieve/, MCP search) reranks with the LLM outside any question: its tokens go
    to the user's ledger, and once the month's are used up the search keeps its order and says why."""
    from knowledge.models import Quota
    from knowledge.quotas import quota_usage_report

    settings.KNOWLEDGE_QUOTA_LLM_TOKENS_PER_MONTH = None
    Quota.objects.create(user=alice, llm_tokens_per_month=400)
    llm_env.script(
        Reply(text=json.dumps({"scores": [1, 2, 3, 4, 5, 6]}), prompt_tokens=300, completion_tokens=20)
    )
    assert (
        retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile)).stats[
            "rerank"
        ]
        == "reranked"
    )
    assert quota_usage_report(user=alice)["llm_tokens_month"]["used"] == 320
    llm_env.script(
        Reply(text=json.dumps({"scores": [1, 2, 3, 4, 5, 6]}), prompt_tokens=300, completion_tokens=20)
    )
    assert (
        retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile)).stats[
            "rerank"
        ]
        == "reranked"
    )
    calls = len(llm_env.requests)
    refused = retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile))
    assert refused.stats["rerank"] == "skipped: LLM token quota reached: 640 of 400 tokens used this month"
    assert len(llm_env.requests) == calls and len(refused.primary_chunks) == 2
