"""Scoring (docs/design.md#scoring), pure functions: similarity, freshness, adjusted score, fusion, limits.

Order of operations on the candidates (documented, and tested):
1. similarity = 1 - cosine distance; candidates below minRelevanceScore are
   dropped, whichever search found them (a lexical-only hit on an unrelated
   question must not turn into an answer).
2. adjusted = (1 - freshnessWeight) x similarity + freshnessWeight x freshness.
3. The semantic ranking is by adjusted score; candidates of several embedding
   models (collections that chose different models) are ranked per model and
   interleaved by rank, as their cosines are not on one scale.
   The semantic search (adjusted score) and the lexical search (BM25) are
   fused by their scores, each divided by its best hit's and weighted by
   semanticWeight (scoreFusion, the default), or by weighted Reciprocal Rank
   Fusion of their rankings; with hybrid off, the order is the adjusted score
   alone. semanticWeight 0 keeps only what the lexical search found; 1 orders
   by the semantic side alone.
4. spreadSources puts each source's (page's, section's) best chunk before any
   source's second chunk, so one long page cannot fill the first places.
5. maxChunksPerDocument keeps the best chunks of each document, then maxDocs
   cuts the list, across all of a profile's collections together.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

UNDATED_FRESHNESS = 0.5


@dataclass
class Candidate:
    chunk_id: int
    document_id: int
    collection_id: int
    similarity: float
    source_date: datetime.date | None = None
    dense_rank: int | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    freshness: float = UNDATED_FRESHNESS
    adjusted: float = 0.0
    fused: float = 0.0
    source_ref: str = ""  # the page, section or element it comes from (its document's part)
    extra: dict = field(default_factory=dict)
    # A lexical hit's scored query lexemes it holds (knowledge.retrieval.lexical.LexicalHit.lexemes).
    lexemes: frozenset[str] | None = None


def freshness_score(source_date: datetime.date | None, *, decay_rate: float, today: datetime.date) -> float:
    if source_date is None:
        return UNDATED_FRESHNESS
    days_old = max(0, (today - source_date).days)
    return math.exp(-decay_rate * days_old)


def adjusted_score(similarity: float, freshness: float, *, freshness_weight: float) -> float:
    return (1 - freshness_weight) * similarity + freshness_weight * freshness


def rrf_scores(rankings: Iterable[tuple[Sequence[int], float]], *, k: int) -> dict[int, float]:
    """Weighted Reciprocal Rank Fusion: sum of weight / (k + rank) over the rankings."""
    scores: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def score_fusion(candidates: list[Candidate], *, weight: float) -> dict[int, float]:
    """Weighted sum of each search's own scores, each divided by its best hit's.

    The dense search's adjusted similarity over its hits, the lexical search's BM25 over its hits,
    each scaled from its theoretical minimum (0: no likeness, no shared word) to the best hit found
    (1); a search that did not find a candidate adds nothing for it. Unlike ranks, scores keep how
    far ahead the best hits are; unlike a min-max over the hits, the scale does not hang on how
    weak the weakest hit happened to be (Bruch et al., "An Analysis of Fusion Functions for Hybrid
    Retrieval", 2023: the theoretical minimum made the convex combination the more robust one).
    Chosen leave-one-set-out over four question sets (docs/operator-guide/evaluation.md).
    """
    dense: dict[int, float] = {}
    for model_candidates in _by_model(c for c in candidates if c.dense_rank is not None).values():
        # Two models' cosines are not on one scale (e5's run higher): each is divided by its own best.
        dense.update(_scaled({c.chunk_id: c.adjusted for c in model_candidates}))
    lexical = _scaled({c.chunk_id: c.lexical_score for c in candidates if c.lexical_score is not None})
    return {
        c.chunk_id: weight * dense.get(c.chunk_id, 0.0) + (1 - weight) * lexical.get(c.chunk_id, 0.0)
        for c in candidates
    }


def _by_model(candidates: Iterable[Candidate]) -> dict[str | None, list[Candidate]]:
    """Candidates per embedding model (``extra["embedding_model"]`` is set only when several are searched)."""
    groups: dict[str | None, list[Candidate]] = {}
    for c in candidates:
        groups.setdefault(c.extra.get("embedding_model"), []).append(c)
    return groups


def _scaled(scores: dict[int, float]) -> dict[int, float]:
    """Each score over the best one, from 0 (a cosine under 0 counts as 0)."""
    if not scores:
        return {}
    best = max(max(scores.values()), 0.0) or 1.0
    return {key: max(value, 0.0) / best for key, value in scores.items()}


def score_candidates(
    candidates: list[Candidate], *, config: dict, today: datetime.date, hybrid: bool
) -> list[Candidate]:
    """Threshold, score, order; returns the candidates best first (before per-document limits)."""
    kept = [c for c in candidates if c.similarity >= config["minRelevanceScore"]]
    for c in kept:
        c.freshness = freshness_score(c.source_date, decay_rate=config["freshnessDecayRate"], today=today)
        c.adjusted = adjusted_score(c.similarity, c.freshness, freshness_weight=config["freshnessWeight"])
    semantic = semantic_ranking(kept)
    if not hybrid:
        for c in semantic:
            c.fused = c.adjusted
        return semantic
    lexical = sorted((c for c in kept if c.lexical_rank is not None), key=lambda c: c.lexical_rank)
    weight = config["semanticWeight"]
    if config["scoreFusion"]:
        fused = score_fusion(kept, weight=weight)
    else:
        fused = rrf_scores(
            [([c.chunk_id for c in semantic], weight), ([c.chunk_id for c in lexical], 1 - weight)],
            k=config["rrfK"],
        )
    for c in kept:
        c.fused = fused.get(c.chunk_id, 0.0)
    # A search with weight 0 contributes nothing: semanticWeight 0 is lexical-only (the semantic
    # ranking holds every candidate, so any weight above 0 keeps them all).
    ranked = kept if weight > 0 else [c for c in kept if c.lexical_rank is not None]
    return sorted(ranked, key=lambda c: (-c.fused, -c.adjusted, c.chunk_id))


def semantic_ranking(candidates: list[Candidate]) -> list[Candidate]:
    """Best adjusted score first; with several embedding models (``extra["embedding_model"]``, set
    only then), each model's ranking by adjusted score, interleaved by rank: every model's best
    candidate, then every second best, and so on (the closer first within a rank)."""
    ranked = sorted(candidates, key=lambda c: (-c.adjusted, c.chunk_id))
    by_model = _by_model(ranked)
    if len(by_model) <= 1:
        return ranked
    keyed = [(r, -c.adjusted, c.chunk_id, c) for group in by_model.values() for r, c in enumerate(group)]
    return [c for *_, c in sorted(keyed, key=lambda item: item[:3])]


def spread_sources(candidates: list[Candidate]) -> list[Candidate]:
    """Each source's best chunk first, in order; then each source's second best, and so on.

    A long page or section is cut into several chunks that score alike: without
    this, three chunks of the best page fill the first places and push the next
    page, which may hold the answer, out of the few chunks an answer is made
    from. The order of first appearances is unchanged.
    """
    occurrence: dict[tuple[int, str], int] = {}
    keyed = []
    for position, c in enumerate(candidates):
        source = (c.document_id, c.source_ref)
        occurrence[source] = occurrence.get(source, 0) + 1
        keyed.append((occurrence[source], position, c))
    return [c for _, _, c in sorted(keyed, key=lambda item: item[:2])]


def limit_per_document(candidates: list[Candidate], *, max_per_document: int) -> list[Candidate]:
    """Keep at most ``max_per_document`` chunks of each document, in order; 0 means no limit."""
    if max_per_document <= 0:
        return list(candidates)
    seen: dict[int, int] = {}
    kept = []
    for c in candidates:
        if seen.get(c.document_id, 0) < max_per_document:
            kept.append(c)
            seen[c.document_id] = seen.get(c.document_id, 0) + 1
    return kept


def select(
    candidates: list[Candidate], *, config: dict, today: datetime.date, hybrid: bool
) -> list[Candidate]:
    ordered = score_candidates(candidates, config=config, today=today, hybrid=hybrid)
    if config.get("spreadSources"):
        ordered = spread_sources(ordered)
    limited = limit_per_document(ordered, max_per_document=config["maxChunksPerDocument"])
    return limited[: config["maxDocs"]]


def same_source_runners_up(
    sources: Iterable[tuple[int, str]], candidates: list[Candidate], *, exclude: set[int]
) -> list[Candidate]:
    """For each (document, page or section) in ``sources``, its best other scored candidate.

    A page is cut into chunks where a length limit falls, not where its meaning does: the chunk
    that ranked first for a page may hold the question's words while the figure that answers sits
    in the page's next chunk (a table beside the sentence that announces it). spreadSources puts
    such a second chunk after every other page's first, out of the few an answer is made from;
    this gives it back, for the extracted answer to read the page on.
    """
    wanted = set(sources)
    best: dict[tuple[int, str], Candidate] = {}
    for c in candidates:
        key = (c.document_id, c.source_ref)
        if key in wanted and c.chunk_id not in exclude and c.fused > 0:
            if key not in best or (c.fused, -c.chunk_id) > (best[key].fused, -best[key].chunk_id):
                best[key] = c
    return [best[key] for key in dict.fromkeys(sources) if key in best]
