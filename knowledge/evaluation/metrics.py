"""Retrieval and answer metrics (docs/design.md#evaluation), pure functions over ranked source lists."""

from __future__ import annotations

import math
from collections.abc import Sequence

Source = tuple[str, str]  # normalised (document filename, source_ref)

COMPOSITE_WEIGHTS = {"recall": 0.30, "mrr": 0.20, "answer_similarity": 0.30, "citation_hit_rate": 0.20}


def recall_at(expected: Sequence[Source], retrieved: Sequence[Source]) -> float:
    """Share of the expected sources found in ``retrieved`` (already cut at k)."""
    if not expected:
        return 0.0
    return len(set(expected) & set(retrieved)) / len(set(expected))


def reciprocal_rank(expected: Sequence[Source], ranked: Sequence[Source]) -> float:
    wanted = set(expected)
    for rank, source in enumerate(ranked, start=1):
        if source in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at(expected: Sequence[Source], ranked: Sequence[Source], k: int = 10) -> float:
    """Binary-relevance nDCG@k; each expected source counts once."""
    wanted, seen = set(expected), set()
    dcg = 0.0
    for rank, source in enumerate(ranked[:k], start=1):
        if source in wanted and source not in seen:
            dcg += 1.0 / math.log2(rank + 1)
            seen.add(source)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal if ideal else 0.0


def citation_hit(expected: Sequence[Source], cited: Sequence[Source]) -> float:
    return 1.0 if set(expected) & set(cited) else 0.0


def composite(*, recall: float, mrr: float, answer_similarity: float, citation_hit_rate: float) -> float:
    values = {
        "recall": recall,
        "mrr": mrr,
        "answer_similarity": answer_similarity,
        "citation_hit_rate": citation_hit_rate,
    }
    return sum(COMPOSITE_WEIGHTS[name] * value for name, value in values.items())


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]
