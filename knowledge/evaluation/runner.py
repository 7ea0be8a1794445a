"""Run a question set through the retrieval service and compute the metrics of docs/design.md#evaluation.

recall@k counts the top-k primary chunks together with the chunks reference
expansion adds to those k (what a context of k primary chunks contains: the
expansion is re-run on each cut, a cheap database lookup); MRR and nDCG@10 rank
the primary chunks. Recall and MRR cover answerable questions
only; abstention accuracy covers the no-answer ones.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from knowledge.evaluation import metrics
from knowledge.evaluation.questions import EvalQuestion, normalise
from knowledge.models import Profile
from knowledge.retrieval.expansion import expand_references
from knowledge.retrieval.service import KnowledgeContext, RetrievalRequest, retrieve

RECALL_CUTS = (1, 3, 5, 10)


@dataclass
class QuestionResult:
    question: EvalQuestion
    ranked: list[tuple[str, str]]
    retrieved_at: dict[int, set[tuple[str, str]]]
    timings_ms: dict
    returned: int
    cited: list[tuple[str, str]] = field(default_factory=list)
    answer_similarity: float | None = None
    answer_run: dict | None = None  # how the answer was made (knowledge.evaluation.answers.answer_run)
    context: KnowledgeContext | None = None
    answerable: bool = True  # the retrieval's verdict: do the chunks answer the question?
    first_quote: tuple[str, str] | None = None  # the source of an extracted answer's first quote


def chunk_source(chunk) -> tuple[str, str]:
    return normalise(chunk.document.filename), normalise(chunk.source_ref)


def question_result(question: EvalQuestion, context: KnowledgeContext, elapsed_ms: float) -> QuestionResult:
    ranked = list(dict.fromkeys(chunk_source(r.chunk) for r in context.primary_chunks))
    retrieved_at = {}
    for cut in RECALL_CUTS:
        primaries = [r.chunk for r in context.primary_chunks[:cut]]
        references = expand_references(primaries, scope=context.scope).chunks if primaries else []
        retrieved_at[cut] = {chunk_source(chunk) for chunk in primaries + references}
    timings = {**context.timings_ms, "retrieval": elapsed_ms}
    result = QuestionResult(question, ranked, retrieved_at, timings, len(context.primary_chunks))
    result.answerable = context.answerable
    return result


@dataclass(frozen=True)
class EvalSearch:
    """How each question of a run is searched: the ``profile``'s collections (narrowed to
    ``collection_ids``) or the ``collection_ids`` alone, ``k`` chunks, the run's ``overrides``, and
    ``chunk_profile_id``'s chunk set instead of the active one (knowledge.retrieval.RetrievalRequest)."""

    profile: Profile | None = None
    collection_ids: list[int] | None = None
    k: int = 10
    overrides: dict | None = None
    chunk_profile_id: int | None = None

    def request(self, question: str) -> RetrievalRequest:
        return RetrievalRequest(
            question=question,
            profile=self.profile,
            collection_ids=self.collection_ids,
            k=self.k,
            overrides=self.overrides,
            chunk_profile_id=self.chunk_profile_id,
        )


def run_retrieval(
    questions: list[EvalQuestion], *, user, search: EvalSearch, on_question=None
) -> list[QuestionResult]:
    results = []
    for question in questions:
        started = time.perf_counter()
        context = retrieve(user=user, request=search.request(question.question))
        result = question_result(question, context, round((time.perf_counter() - started) * 1000, 2))
        result.context = context
        results.append(result)
        if on_question:
            on_question(result)
    return results


def summarise(results: list[QuestionResult], *, k: int, with_answers: bool = False) -> dict:
    summary = _metrics(results, k=k, with_answers=with_answers)
    by_kind = defaultdict(list)
    for result in results:
        by_kind[result.question.kind or "unlabelled"].append(result)
    summary["by_kind"] = {
        kind: _metrics(group, k=k, with_answers=with_answers) for kind, group in sorted(by_kind.items())
    }
    summary["latency_ms"] = _latency(results)
    return summary


def _metrics(results: list[QuestionResult], *, k: int, with_answers: bool) -> dict:
    answerable = [r for r in results if r.question.answerable]
    unanswerable = [r for r in results if not r.question.answerable]
    out = {"questions": len(results), "answerable": len(answerable)}
    for cut in RECALL_CUTS:
        out[f"recall@{cut}"] = _rounded(
            metrics.mean([metrics.recall_at(r.question.expected, r.retrieved_at[cut]) for r in answerable])
        )
    out["mrr"] = _rounded(
        metrics.mean([metrics.reciprocal_rank(r.question.expected, r.ranked) for r in answerable])
    )
    out["ndcg@10"] = _rounded(
        metrics.mean([metrics.ndcg_at(r.question.expected, r.ranked, 10) for r in answerable])
    )
    # Refused: nothing returned, or the answerability verdict says the chunks do not answer.
    out["abstention_accuracy"] = (
        _rounded(metrics.mean([1.0 if _refused(r) else 0.0 for r in unanswerable])) if unanswerable else None
    )
    out["answerable_refused"] = (
        _rounded(metrics.mean([1.0 if _refused(r) else 0.0 for r in answerable])) if answerable else None
    )
    out["embedding_coverage"] = _rounded(
        sum(min(r.returned, k) for r in answerable) / (len(answerable) * k) if answerable else 0.0
    )
    if with_answers:
        out.update(_answer_metrics(answerable, out))
    return out


def question_rows(results: list[QuestionResult]) -> list[dict]:
    """One row per question (what moved a metric): the gold source's rank, the verdict, the first quote."""
    return [_question_row(result) for result in results]


def _question_row(result: QuestionResult) -> dict:
    expected = set(result.question.expected)
    rank = next((n for n, source in enumerate(result.ranked, start=1) if source in expected), None)
    verdict = result.context.answerability if result.context else None
    row = {
        "id": result.question.id,
        "kind": result.question.kind,
        "answerable": result.question.answerable,
        "gold_rank": rank,
        "recall@5": metrics.recall_at(result.question.expected, result.retrieved_at[5])
        if 5 in result.retrieved_at
        else None,
        "refused": _refused(result),
        "answerability": verdict.as_dict() if verdict else None,
        "top": [list(source) for source in result.ranked[:3]],
    }
    if result.answer_run is not None:
        row["first_quote"] = list(result.first_quote) if result.first_quote else None
        row["first_quote_hit"] = result.first_quote in expected
        row["citation_hit"] = bool(expected & set(result.cited))
        row["answer_similarity"] = result.answer_similarity
    return row


def _refused(result: QuestionResult) -> bool:
    return result.returned == 0 or not result.answerable


def _answer_metrics(answerable: list[QuestionResult], out: dict) -> dict:
    hits = metrics.mean([metrics.citation_hit(r.question.expected, r.cited) for r in answerable])
    # Did the answer lead with a sentence from a gold source? Extracted answers quote; when no answer
    # quoted anything (LLM answers) the metric is None. A refused or quote-less answer counts as a miss.
    quoted = any(r.first_quote is not None for r in answerable)
    sims = [r.answer_similarity for r in answerable if r.answer_similarity is not None]
    similarity = metrics.mean(sims)
    return {
        "citation_hit_rate": _rounded(hits),
        "first_quote_hit_rate": _rounded(
            metrics.mean([1.0 if r.first_quote in set(r.question.expected) else 0.0 for r in answerable])
        )
        if quoted
        else None,
        "answer_similarity": _rounded(similarity),
        "composite": _rounded(
            metrics.composite(
                recall=out["recall@5"], mrr=out["mrr"], answer_similarity=similarity, citation_hit_rate=hits
            )
        ),
        **answer_process_metrics([r.answer_run for r in answerable if r.answer_run]),
    }


def answer_process_metrics(runs: list[dict]) -> dict:
    """Multi-step metrics (docs/design.md#agents), LLM calls and answer latency, over the answered questions.

    A standard (non-agentic) answer counts as one retrieval round with no
    expansion, rewrite, retry or flag; graded_relevant_ratio covers only
    passages an LLM graded (None when none was).
    """
    traces = [run.get("agentic") or {} for run in runs]
    graded = sum(t.get("graded", 0) for t in traces)
    latencies = [run["latency_ms"] for run in runs if run.get("latency_ms") is not None]
    return {
        "agentic_answers": sum(1 for run in runs if run.get("agentic")),
        "retry_rate": _share(traces, lambda t: t.get("retries", 0) > 0),
        "rewrite_rate": _share(traces, lambda t: t.get("rewrites", 0) > 0),
        "expansion_rate": _share(traces, lambda t: bool(t.get("expanded"))),
        "hallucination_detection_rate": _share(traces, lambda t: bool(t.get("flagged"))),
        "avg_retrieval_rounds": _rounded(metrics.mean([t.get("retrieval_rounds", 1) for t in traces])),
        "graded_relevant_ratio": _rounded(sum(t.get("passed", 0) for t in traces) / graded)
        if graded
        else None,
        "budget_exhausted_rate": _share(traces, lambda t: bool(t.get("budget_exhausted"))),
        "llm_calls_per_answer": _rounded(metrics.mean([run["llm_calls"] for run in runs])),
        "answer_latency_ms": {
            "p50": round(metrics.percentile(latencies, 50), 1) if latencies else None,
            "p95": round(metrics.percentile(latencies, 95), 1) if latencies else None,
        },
    }


def _share(traces: list[dict], condition) -> float:
    return _rounded(sum(1 for t in traces if condition(t)) / len(traces)) if traces else 0.0


def _latency(results: list[QuestionResult]) -> dict:
    stages = defaultdict(list)
    for result in results:
        for stage, ms in result.timings_ms.items():
            stages[stage].append(ms)
    return {
        stage: {"p50": round(metrics.percentile(v, 50), 2), "p95": round(metrics.percentile(v, 95), 2)}
        for stage, v in stages.items()
    }


def _rounded(value: float) -> float:
    return round(value, 4)
