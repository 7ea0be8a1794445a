"""A profile's rerank endpoint: a real HTTP server on 127.0.0.1 answering ``POST /v1/rerank`` in
the Cohere/Jina/TEI shape (tests/model_server.py; a bi-encoder's cosine stands in for a
cross-encoder there, none being installable offline), registered through the API, chosen by a
reranking_profile, its scores recorded with every result; its failure keeps the retrieval order."""

from __future__ import annotations

import pytest

from config.base.errors import KnowledgeError
from knowledge.models import Profile, RerankEndpoint
from knowledge.retrieval.service import retrieve
from knowledge.services.model_endpoints import rerank_endpoint_save
from tests.asking import request_for
from tests.model_server import Reply

pytest_plugins = ["tests.model_server"]
pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Which pet operations take an id in the path?"
SECRET = "sk-rerank-5c7a2f"


@pytest.fixture
def reranker(minilm_server):
    endpoint = RerankEndpoint(
        name="tei/reranker", base_url=minilm_server.base_url, model="reranker", api_key=SECRET
    )
    return rerank_endpoint_save(endpoint)


def test_the_profiles_reranker_orders_the_candidates_by_its_scores(
    alice, reranking_profile, reranker, minilm_server
):
    Profile.objects.filter(pk=reranking_profile.pk).update(reranker=reranker)
    reranking_profile.refresh_from_db()
    baseline = retrieve(
        user=alice,
        request=request_for(alice, question=QUESTION, profile=reranking_profile, rerank_enabled=False),
    )
    context = retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile))
    assert context.stats["rerank"] == "reranked by tei/reranker"
    request = minilm_server.requests[-1]
    assert request.path.endswith("/rerank") and request.body["query"] == QUESTION
    assert request.authorization == f"Bearer {SECRET}"
    assert len(request.body["documents"]) == 6  # maxDocs 2 x 3 candidates go to the reranker
    # The served model's own scores, best first, recorded on each result.
    served = minilm_server.encode([QUESTION] + request.body["documents"])
    expected = sorted((served[1:] @ served[0]).tolist(), reverse=True)[:2]
    shown = [r.scores["rerank"] for r in context.primary_chunks]
    assert shown == pytest.approx(expected, abs=1e-4)
    assert all(r.scores["reranker"] == "tei/reranker" for r in context.primary_chunks)
    assert {r.chunk.pk for r in baseline.primary_chunks} != set() and "rerank" not in baseline.stats


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(status=500), "answered HTTP 500"),
        (Reply(count=2), "scored 2 of 6 passages"),
        (Reply(body=b"not json"), "not rerank results"),
        (Reply(delay=3), "did not answer within 1 s"),
    ],
    ids=["error", "too-few", "malformed", "slow"],
)
def test_a_failing_reranker_keeps_the_retrieval_order_and_says_why(
    alice, reranking_profile, reranker, minilm_server, reply, reason
):
    # Only the slow reply is meant to run out of time: the others get the default's room.
    RerankEndpoint.objects.filter(pk=reranker.pk).update(timeout_seconds=1 if reply.delay else 10)
    Profile.objects.filter(pk=reranking_profile.pk).update(reranker=reranker)
    reranking_profile.refresh_from_db()
    minilm_server.script(reply)
    context = retrieve(user=alice, request=request_for(alice, question=QUESTION, profile=reranking_profile))
    assert context.stats["rerank"].startswith("failed: ") and reason in context.stats["rerank"]
    assert SECRET not in context.stats["rerank"]
    unreranked = retrieve(
        user=alice,
        request=request_for(alice, question=QUESTION, profile=reranking_profile, rerank_enabled=False),
    )
    assert [r.chunk.pk for r in context.primary_chunks] == [r.chunk.pk for r in unreranked.primary_chunks]


def test_a_reranker_that_does_not_answer_in_the_expected_shape_is_not_registered(minilm_server):
    minilm_server.script(Reply(body={"scores": [1, 2]}))
    with pytest.raises(KnowledgeError, match="not rerank results"):
        rerank_endpoint_save(RerankEndpoint(name="bad", base_url=minilm_server.base_url))
    minilm_server.stop()
    with pytest.raises(KnowledgeError, match="unreachable"):
        rerank_endpoint_save(RerankEndpoint(name="gone", base_url=minilm_server.base_url))
    assert not RerankEndpoint.objects.exists()
