"""What hybrid search and reranking change for given queries (the hybrid-search design's ``optimize_search``).

Each query runs through the one retrieval service several times, differing
only in per-call overrides (below admin locks, so a locked parameter shows up
as two identical variants):

    dense     semantic search only
    hybrid    semantic + full-text, fused by RRF
    reranked  hybrid as configured, then the profile's LLM reranking (only
              when a collection of the profile asks for reranking)

For each: wall-clock latency with the service's per-stage timings, and the
ranked passages with their scores; then what changed between them.
"""

from __future__ import annotations

import time
from statistics import mean

from config.base.errors import KnowledgeError
from knowledge.access import QuestionScope
from knowledge.parameter_values import resolved_config
from knowledge.retrieval.passages import source_fields
from knowledge.retrieval.service import KnowledgeContext, RetrievalRequest, question_clean, retrieve

MAX_QUERIES = 10


def search_compare(*, user, queries: list[str], asked: QuestionScope, k: int | None = None) -> dict:
    """Every query's variants and their differences, and averages over the queries.

    ``asked`` is the scope the edge resolved (knowledge.access.question_scope_checked).
    """
    queries = _clean_queries(queries)
    config = resolved_config(asked.profile, None, k)
    reranks = bool(asked.rerank_ids)  # a collection of the profile asks for reranking
    per_query = [_compare_one(user, query, asked, k, config["hybrid"], reranks) for query in queries]
    return {
        "configured": {"hybrid": config["hybrid"], "reranking": reranks, "maxDocs": config["maxDocs"]},
        "queries": per_query,
        "summary": _summary(per_query),
    }


def _clean_queries(queries) -> list[str]:
    if not queries:
        raise KnowledgeError("give at least one query")
    if len(queries) > MAX_QUERIES:
        raise KnowledgeError(f"at most {MAX_QUERIES} queries per call")
    return [question_clean(query) for query in queries]


def _compare_one(user, query, asked, k, configured_hybrid, reranks) -> dict:
    def run(hybrid: bool, rerank: bool) -> tuple[KnowledgeContext, float]:
        started = time.perf_counter()
        context = retrieve(
            user=user,
            request=RetrievalRequest(
                question=query, asked=asked, k=k, overrides={"hybrid": hybrid}, rerank_enabled=rerank
            ),
        )
        return context, round((time.perf_counter() - started) * 1000, 1)

    dense, hybrid = run(False, False), run(True, False)
    variants = {"dense": _variant(*dense), "hybrid": _variant(*hybrid)}
    effects = {"hybrid_vs_dense": _difference(dense[0], hybrid[0])}
    if reranks:
        reranked = run(configured_hybrid, True)
        variants["reranked"] = _variant(*reranked)
        unreranked = hybrid if configured_hybrid else dense
        effects["reranking"] = {
            "status": reranked[0].stats.get("rerank", ""),
            **_difference(unreranked[0], reranked[0]),
        }
    else:
        effects["reranking"] = {"status": "not configured: no collection searched here asks for reranking"}
    return {"query": query, "variants": variants, "effects": effects}


def _variant(context: KnowledgeContext, latency_ms: float) -> dict:
    similarities = [item.scores["similarity"] for item in context.primary_chunks]
    return {
        "hybrid": context.config["hybrid"],
        "latency_ms": latency_ms,
        "timings_ms": context.timings_ms,
        "top_similarity": max(similarities, default=None),
        "mean_similarity": round(mean(similarities), 4) if similarities else None,
        "results": [_ranked(item) for item in context.primary_chunks],
    }


def _ranked(item) -> dict:
    return source_fields(item, ("chunk_id", "document", "source_ref", "scores"))


def _difference(before: KnowledgeContext, after: KnowledgeContext) -> dict:
    """Which passages the second ranking added, dropped or moved relative to the first."""
    first = [item.chunk.pk for item in before.primary_chunks]
    second = [item.chunk.pk for item in after.primary_chunks]
    return {
        "same_passages": len(set(first) & set(second)),
        "added": [pk for pk in second if pk not in first],
        "dropped": [pk for pk in first if pk not in second],
        "top_changed": first[:1] != second[:1],
        "order_changed": first != second,
    }


def _summary(per_query: list[dict]) -> dict:
    names = per_query[0]["variants"].keys()
    summary = {
        name: {
            "mean_latency_ms": round(mean(q["variants"][name]["latency_ms"] for q in per_query), 1),
            "mean_top_similarity": _mean_of(q["variants"][name]["top_similarity"] for q in per_query),
        }
        for name in names
    }
    hybrid_effects = [q["effects"]["hybrid_vs_dense"] for q in per_query]
    summary["hybrid_changed_top_result"] = sum(e["top_changed"] for e in hybrid_effects)
    summary["hybrid_added_passages"] = sum(len(e["added"]) for e in hybrid_effects)
    reranked = [q["effects"]["reranking"] for q in per_query if "top_changed" in q["effects"]["reranking"]]
    if reranked:
        summary["reranking_changed_top_result"] = sum(e["top_changed"] for e in reranked)
    return summary


def _mean_of(values) -> float | None:
    present = [value for value in values if value is not None]
    return round(mean(present), 4) if present else None
