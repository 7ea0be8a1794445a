"""Scoring (docs/design.md#scoring) on worked examples, and the threshold -> per-document -> maxDocs order."""

from __future__ import annotations

import datetime
import math

import pytest

from knowledge.retrieval.scoring import (
    Candidate,
    adjusted_score,
    freshness_score,
    limit_per_document,
    rrf_scores,
    same_source_runners_up,
    score_candidates,
    score_fusion,
    select,
    spread_sources,
)

TODAY = datetime.date(2026, 11, 21)


def days_ago(n: int) -> datetime.date:
    return TODAY - datetime.timedelta(days=n)


def config(**overrides) -> dict:
    base = {
        "maxDocs": 3,
        "minRelevanceScore": 0.30,
        "maxChunksPerDocument": 0,
        "freshnessWeight": 0.0,
        "freshnessDecayRate": 0.005,
        "semanticWeight": 0.7,
        "scoreFusion": False,
        "rrfK": 60,
    }
    return {**base, **overrides}


@pytest.mark.parametrize(
    ("days", "expected"),
    [(0, 1.000), (7, 0.966), (30, 0.861), (90, 0.638), (180, 0.407), (365, 0.161), (730, 0.026)],
)
def test_freshness_decay_table_of_seed_000(days, expected):
    assert freshness_score(days_ago(days), decay_rate=0.005, today=TODAY) == pytest.approx(
        expected, abs=0.001
    )


def test_undated_documents_get_neutral_freshness():
    assert freshness_score(None, decay_rate=0.005, today=TODAY) == 0.5


def test_example_1_pure_relevance():
    assert adjusted_score(0.82, 0.95, freshness_weight=0.0) == pytest.approx(0.82)


def test_example_2_balanced_newer_document_wins():
    fresh_a = freshness_score(days_ago(10), decay_rate=0.005, today=TODAY)
    fresh_b = freshness_score(days_ago(200), decay_rate=0.005, today=TODAY)
    assert fresh_a == pytest.approx(0.951, abs=0.001)
    assert fresh_b == pytest.approx(0.368, abs=0.001)
    a = adjusted_score(0.85, fresh_a, freshness_weight=0.3)
    b = adjusted_score(0.90, fresh_b, freshness_weight=0.3)
    assert a == pytest.approx(0.880, abs=0.001)
    assert b == pytest.approx(0.740, abs=0.001)
    ranked = score_candidates(
        [
            Candidate(1, 1, 1, similarity=0.85, source_date=days_ago(10)),
            Candidate(2, 2, 1, similarity=0.90, source_date=days_ago(200)),
        ],
        config=config(freshnessWeight=0.3),
        today=TODAY,
        hybrid=False,
    )
    assert [c.chunk_id for c in ranked] == [1, 2]


def test_example_3_heavy_freshness_bias():
    a = adjusted_score(
        0.60, freshness_score(days_ago(2), decay_rate=0.005, today=TODAY), freshness_weight=0.7
    )
    b = adjusted_score(
        0.95, freshness_score(days_ago(365), decay_rate=0.005, today=TODAY), freshness_weight=0.7
    )
    assert a == pytest.approx(0.873, abs=0.001)
    assert b == pytest.approx(0.398, abs=0.001)


def test_rrf_weights_and_k():
    scores = rrf_scores([([10, 20], 0.7), ([20, 30], 0.3)], k=60)
    assert scores[10] == pytest.approx(0.7 / 61)
    assert scores[20] == pytest.approx(0.7 / 62 + 0.3 / 61)
    assert scores[30] == pytest.approx(0.3 / 62)


def test_threshold_applies_to_similarity_not_adjusted_score():
    # Very fresh but irrelevant: adjusted 0.6 x 1.0 + 0.4 x 0.2 = 0.68, similarity only 0.2.
    fresh_but_irrelevant = Candidate(1, 1, 1, similarity=0.2, source_date=TODAY)
    old_but_relevant = Candidate(2, 2, 1, similarity=0.5, source_date=days_ago(3000))
    kept = select(
        [fresh_but_irrelevant, old_but_relevant],
        config=config(freshnessWeight=0.6),
        today=TODAY,
        hybrid=False,
    )
    assert [c.chunk_id for c in kept] == [2]


def test_threshold_then_per_document_limit_then_max_docs():
    candidates = [
        Candidate(1, document_id=1, collection_id=1, similarity=0.90),
        Candidate(2, document_id=1, collection_id=1, similarity=0.88),
        Candidate(3, document_id=1, collection_id=1, similarity=0.86),
        Candidate(4, document_id=2, collection_id=1, similarity=0.80),
        Candidate(5, document_id=3, collection_id=2, similarity=0.70),
        Candidate(6, document_id=4, collection_id=2, similarity=0.25),  # below threshold
    ]
    chosen = select(candidates, config=config(maxChunksPerDocument=2, maxDocs=4), today=TODAY, hybrid=False)
    assert [c.chunk_id for c in chosen] == [1, 2, 4, 5]
    unlimited = select(candidates, config=config(maxDocs=10), today=TODAY, hybrid=False)
    assert [c.chunk_id for c in unlimited] == [1, 2, 3, 4, 5]


def test_each_source_best_chunk_comes_before_any_second_chunk():
    # Three chunks of one long page score alike; the next page must not be pushed out of the top three.
    candidates = [
        Candidate(1, 1, 1, similarity=0.90, source_ref="page=20"),
        Candidate(2, 1, 1, similarity=0.89, source_ref="page=20"),
        Candidate(3, 1, 1, similarity=0.88, source_ref="page=20"),
        Candidate(4, 1, 1, similarity=0.80, source_ref="page=21"),
        Candidate(5, 2, 1, similarity=0.79, source_ref="page=20"),  # same page number, another document
        Candidate(6, 1, 1, similarity=0.70, source_ref="page=21"),
    ]
    assert [c.chunk_id for c in spread_sources(candidates)] == [1, 4, 5, 2, 6, 3]
    spread = select(candidates, config=config(maxDocs=3, spreadSources=True), today=TODAY, hybrid=False)
    assert [c.chunk_id for c in spread] == [1, 4, 5]
    plain = select(candidates, config=config(maxDocs=3, spreadSources=False), today=TODAY, hybrid=False)
    assert [c.chunk_id for c in plain] == [1, 2, 3]


def test_collections_compete_on_merit():
    candidates = [
        Candidate(1, 1, collection_id=1, similarity=0.40),
        Candidate(2, 2, collection_id=2, similarity=0.95),
        Candidate(3, 3, collection_id=2, similarity=0.90),
        Candidate(4, 4, collection_id=3, similarity=0.50),
    ]
    chosen = select(candidates, config=config(maxDocs=3), today=TODAY, hybrid=False)
    assert [c.chunk_id for c in chosen] == [2, 3, 4]


def test_hybrid_fusion_lifts_a_strong_lexical_match():
    candidates = [
        Candidate(1, 1, 1, similarity=0.62, lexical_rank=None),
        Candidate(2, 2, 1, similarity=0.61, lexical_rank=1),
        Candidate(3, 3, 1, similarity=0.60, lexical_rank=2),
    ]
    ranked = score_candidates(candidates, config=config(), today=TODAY, hybrid=True)
    assert [c.chunk_id for c in ranked] == [2, 3, 1]
    assert ranked[0].fused == pytest.approx(0.7 / 62 + 0.3 / 61)
    semantic_only = score_candidates(candidates, config=config(), today=TODAY, hybrid=False)
    assert [c.chunk_id for c in semantic_only] == [1, 2, 3]
    all_semantic = score_candidates(candidates, config=config(semanticWeight=1.0), today=TODAY, hybrid=True)
    assert [c.chunk_id for c in all_semantic] == [1, 2, 3]


def test_limit_per_document_zero_means_unlimited():
    items = [Candidate(i, document_id=1, collection_id=1, similarity=0.9) for i in range(5)]
    assert len(limit_per_document(items, max_per_document=0)) == 5
    assert len(limit_per_document(items, max_per_document=1)) == 1
    assert math.isclose(items[0].similarity, 0.9)


def test_semantic_weight_zero_is_lexical_only_and_one_is_semantic_only():
    candidates = [
        Candidate(1, 1, 1, similarity=0.9, lexical_rank=None),
        Candidate(2, 2, 1, similarity=0.5, lexical_rank=1),
    ]
    lexical_only = score_candidates(candidates, config=config(semanticWeight=0.0), today=TODAY, hybrid=True)
    assert [c.chunk_id for c in lexical_only] == [2]
    semantic_only = score_candidates(candidates, config=config(semanticWeight=1.0), today=TODAY, hybrid=True)
    assert [c.chunk_id for c in semantic_only] == [1, 2]


def test_score_fusion_divides_each_search_by_its_best_hit_and_weighs_them():
    candidates = [
        Candidate(1, 1, 1, similarity=0.80, dense_rank=1, lexical_rank=2, lexical_score=4.0),
        Candidate(2, 2, 1, similarity=0.60, dense_rank=2, lexical_rank=1, lexical_score=10.0),
        Candidate(3, 3, 1, similarity=0.40, dense_rank=3),
        Candidate(4, 4, 1, similarity=0.30, lexical_rank=3, lexical_score=1.0),
        Candidate(5, 5, 1, similarity=-0.10, dense_rank=4),
    ]
    for c in candidates:
        c.adjusted = c.similarity
    fused = score_fusion(candidates, weight=0.6)
    # Dense over its best hit 0.8/0.6/0.4 -> 1/0.75/0.5; BM25 over its best 4/10/1 -> 0.4/1/0.1.
    assert fused[1] == pytest.approx(0.6 * 1.0 + 0.4 * 0.4)
    assert fused[2] == pytest.approx(0.6 * 0.75 + 0.4 * 1.0)
    assert fused[3] == pytest.approx(0.6 * 0.5)
    assert fused[4] == pytest.approx(0.4 * 0.1)  # a lexical hit alone: the dense side adds nothing
    assert fused[5] == pytest.approx(0.0)  # a cosine under 0 is as unlike as it gets


def test_score_fusion_does_not_hang_on_the_weakest_hit():
    """A min-max scale would move every score when a weaker hit joins; the best hit's does not."""
    pair = [
        Candidate(1, 1, 1, similarity=0.70, dense_rank=1, lexical_rank=2, lexical_score=5.0),
        Candidate(2, 2, 1, similarity=0.65, dense_rank=2, lexical_rank=1, lexical_score=6.0),
    ]
    weak = Candidate(3, 3, 1, similarity=0.20, dense_rank=3, lexical_rank=3, lexical_score=0.5)
    for c in [*pair, weak]:
        c.adjusted = c.similarity
    alone, joined = score_fusion(pair, weight=0.65), score_fusion([*pair, weak], weight=0.65)
    assert alone[1] == pytest.approx(joined[1]) and alone[2] == pytest.approx(joined[2])


def test_score_fusion_keeps_the_margin_that_ranks_forget():
    """A far better lexical hit beats a marginally better dense one: ranks would call it a tie."""
    candidates = [
        Candidate(1, 1, 1, similarity=0.61, dense_rank=1, lexical_rank=2, lexical_score=2.0),
        Candidate(2, 2, 1, similarity=0.60, dense_rank=2, lexical_rank=1, lexical_score=12.0),
        Candidate(3, 3, 1, similarity=0.30, dense_rank=3, lexical_rank=3, lexical_score=1.0),
    ]
    by_scores = score_candidates(
        candidates, config=config(scoreFusion=True, semanticWeight=0.6), today=TODAY, hybrid=True
    )
    assert [c.chunk_id for c in by_scores] == [2, 1, 3]
    by_ranks = score_candidates(
        candidates, config=config(scoreFusion=False, semanticWeight=0.6), today=TODAY, hybrid=True
    )
    assert [c.chunk_id for c in by_ranks] == [1, 2, 3]


def test_score_fusion_semantic_weight_zero_is_lexical_only_and_one_keeps_every_candidate():
    candidates = [
        Candidate(1, 1, 1, similarity=0.9, dense_rank=1),
        Candidate(2, 2, 1, similarity=0.5, dense_rank=2, lexical_rank=1, lexical_score=3.0),
        Candidate(3, 3, 1, similarity=0.4, lexical_rank=2, lexical_score=1.0),
    ]
    lexical_only = score_candidates(
        candidates, config=config(scoreFusion=True, semanticWeight=0.0), today=TODAY, hybrid=True
    )
    assert [c.chunk_id for c in lexical_only] == [2, 3]
    semantic = score_candidates(
        candidates, config=config(scoreFusion=True, semanticWeight=1.0), today=TODAY, hybrid=True
    )
    assert [c.chunk_id for c in semantic] == [1, 2, 3]


def test_candidates_of_two_embedding_models_are_ranked_per_model_and_interleaved_by_rank():
    """e5's cosines run higher than MiniLM's: compared directly, every e5 candidate would come first."""
    from knowledge.retrieval.scoring import semantic_ranking

    def candidate(chunk_id: int, adjusted: float, model: str) -> Candidate:
        return Candidate(chunk_id, 1, 1, adjusted, adjusted=adjusted, extra={"embedding_model": model})

    e5 = [candidate(1, 0.91, "e5"), candidate(2, 0.88, "e5"), candidate(3, 0.86, "e5")]
    minilm = [candidate(4, 0.55, "minilm"), candidate(5, 0.40, "minilm")]
    assert [c.chunk_id for c in semantic_ranking(e5 + minilm)] == [1, 4, 2, 5, 3]
    # One model (no model recorded): the adjusted score alone, as always.
    plain = [Candidate(i, 1, 1, s, adjusted=s) for i, s in ((1, 0.2), (2, 0.9), (3, 0.5))]
    assert [c.chunk_id for c in semantic_ranking(plain)] == [2, 3, 1]


def test_each_chosen_page_gets_back_its_best_other_scored_chunk():
    def scored(chunk_id, document_id, ref, fused):
        c = Candidate(chunk_id, document_id, 1, similarity=0.5, source_ref=ref)
        c.fused = fused
        return c

    candidates = [
        scored(1, 1, "page=8", 0.9),  # chosen
        scored(2, 1, "page=8", 0.4),  # the page's table, ranked after every other page's first chunk
        scored(3, 1, "page=8", 0.6),
        scored(4, 1, "page=2", 0.8),  # chosen, alone on its page
        scored(5, 2, "page=8", 0.7),  # another document's page 8
        scored(6, 1, "page=3", 0.5),  # a page not chosen
        scored(7, 1, "page=8", 0.0),  # dropped by the relevance threshold (never scored)
    ]
    runners_up = same_source_runners_up([(1, "page=8"), (1, "page=2")], candidates, exclude={1, 4})
    assert [c.chunk_id for c in runners_up] == [3]


def test_score_fusion_divides_each_embedding_models_cosines_by_that_models_best():
    """One scale for both would put every e5 hit (cosines about 0.8 even for unrelated text) first."""

    def candidate(chunk_id: int, cosine: float, model: str) -> Candidate:
        c = Candidate(chunk_id, chunk_id, 1, cosine, dense_rank=chunk_id, extra={"embedding_model": model})
        c.adjusted = cosine
        return c

    e5 = [candidate(1, 0.90, "e5"), candidate(2, 0.80, "e5")]
    minilm = [candidate(3, 0.60, "minilm"), candidate(4, 0.30, "minilm")]
    fused = score_fusion(e5 + minilm, weight=1.0)
    assert fused[1] == pytest.approx(1.0) and fused[3] == pytest.approx(1.0)
    assert fused[2] == pytest.approx(0.80 / 0.90) and fused[4] == pytest.approx(0.5)
