"""The gate: a built release is measured against the serving one before it serves.

The collection's questions (answers its users rated helpful, question sets linked to it, and, with
an LLM, questions written from sampled passages) run against both releases in one run, question by
question in turn, so both meet the same machine load. The candidate is promoted when no quality
metric drops by more than KNOWLEDGE_RELEASE_GATE_TOLERANCE and its median search time stays within
KNOWLEDGE_RELEASE_GATE_LATENCY_RATIO of the serving one's; otherwise it is held for the operator.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from knowledge.evaluation import metrics
from knowledge.evaluation.gate_questions import GateQuestions, gate_questions
from knowledge.evaluation.release_request import release_request
from knowledge.evaluation.runner import QuestionResult, chunk_source, question_result, summarise
from knowledge.ingestion.reindex import serving_release
from knowledge.models import Release
from knowledge.retrieval.continuation import with_continuations
from knowledge.retrieval.service import retrieve
from knowledge.services.releases import release_hold, release_promote
from knowledge.synthesis.extractive import extractive_answer, says_nothing

logger = logging.getLogger(__name__)

GATE_K = 10
# The quality metrics the gate compares (higher is better), and how the report names them.
QUALITY_METRICS = ("recall@5", "mrr", "ndcg@10", "abstention_accuracy", "first_quote_hit_rate")
# Below this, a slower median is noise on a shared machine, whatever the ratio.
LATENCY_FLOOR_MS = 10.0


def release_gate_run(*, release_id: int) -> Release:
    """Measure candidate ``release_id`` against the serving release; promote or hold it."""
    release = Release.objects.select_related("collection", "chunk_profile").get(pk=release_id)
    if release.state != Release.State.CANDIDATE:
        return release  # decided, replaced or discarded meanwhile
    collection = release.collection
    serving = serving_release(collection)
    reader = _reader(collection, release)
    if reader is None:  # an admin-owned collection on an installation without an administrator
        report = {"questions": 0, "origins": {}, "notes": ["no user can read the collection to ask it"]}
        return _held(release, report, reason="nothing to measure: no user can read the collection to ask it")
    started = time.perf_counter()
    questions = gate_questions(collection=collection, reader=reader, releases=[serving, release])
    if not questions.items:
        report = {"questions": 0, "origins": questions.origins, "notes": questions.notes}
        return _held(release, report, reason=f"nothing to measure: {questions.nothing_reason()}")
    runs = _measured(questions, reader=reader, collection_id=collection.pk, releases=[serving, release])
    report = _report(questions, serving, release, runs)
    report["seconds"] = round(time.perf_counter() - started, 1)
    if report["regressions"]:
        names = ", ".join(r["metric"] for r in report["regressions"])
        return _held(release, report, reason=f"regressed beyond tolerance: {names}")
    with transaction.atomic():  # a refused promotion leaves no report saying "promoted"
        release.gate = report
        release.save(update_fields=["gate"])
        return release_promote(release=release, reason="promoted by the gate: no metric regressed")


def _held(release: Release, report: dict, *, reason: str) -> Release:
    release.gate = {**report, "decision": "held", "ran_at": timezone.now().isoformat()}
    release.save(update_fields=["gate"])
    logger.info("Release %s of %s held: %s", release.pk, release.collection_id, reason)
    return release_hold(release=release, reason=reason)


def _reader(collection, release):
    """Who the questions are asked as: the owner (access rules apply as for them), else whoever
    asked for the release, else an administrator (an admin-owned collection has no owner)."""
    if collection.owner_id:
        return collection.owner
    if release.created_by_id:
        return release.created_by
    return get_user_model().objects.filter(is_superuser=True, is_active=True).order_by("pk").first()


def _measured(questions: GateQuestions, *, reader, collection_id: int, releases: list[Release]) -> list[list]:
    """Each release's results, the questions asked of both in turn (same load for both)."""
    runs: list[list[QuestionResult]] = [[] for _ in releases]
    for question in questions.items:
        for results, release in zip(runs, releases, strict=True):
            results.append(_asked(question, reader=reader, collection_id=collection_id, release=release))
    return runs


def _asked(question, *, reader, collection_id: int, release: Release) -> QuestionResult:
    started = time.perf_counter()
    request = release_request(
        question.question, reader=reader, collection_id=collection_id, release=release, k=GATE_K
    )
    context = retrieve(user=reader, request=request)
    result = question_result(question, context, round((time.perf_counter() - started) * 1000, 2))
    result.context = context
    result.first_quote = _first_quote(question.question, context)
    return result


def _first_quote(question: str, context):
    """(document, source_ref) an extracted answer would quote first; None when it would refuse."""
    if not context.answerable or not context.sources:
        return None
    sources = with_continuations(context.sources, says_nothing=says_nothing, runners_up=context.runners_up)
    answer = extractive_answer(question=question, sources=sources, cover_documents=context.cover_documents)
    if not answer.sentences:
        return None
    first = next((s for s in answer.passages if s.source_number == answer.sentences[0].source_number), None)
    return chunk_source(first.chunk) if first is not None else None


def _release_metrics(results: list[QuestionResult]) -> dict:
    summary = summarise(results, k=GATE_K)
    answerable = [r for r in results if r.question.answerable]
    hits = [1.0 if r.first_quote in set(r.question.expected) else 0.0 for r in answerable]
    latencies = [r.timings_ms["retrieval"] for r in results]
    return {
        "questions": summary["questions"],
        "answerable": summary["answerable"],
        **{f"recall@{cut}": summary[f"recall@{cut}"] for cut in (1, 3, 5, 10)},
        "mrr": summary["mrr"],
        "ndcg@10": summary["ndcg@10"],
        "abstention_accuracy": summary["abstention_accuracy"],
        "first_quote_hit_rate": round(metrics.mean(hits), 4) if answerable else None,
        "latency_ms": {
            "p50": round(metrics.percentile(latencies, 50), 1),
            "p95": round(metrics.percentile(latencies, 95), 1),
        },
    }


def _report(questions: GateQuestions, serving: Release, candidate: Release, runs: list[list]) -> dict:
    measured = [_release_metrics(results) for results in runs]
    sides = {"serving": (serving, measured[0]), "candidate": (candidate, measured[1])}
    per_question = [_question_diff(a, b) for a, b in zip(runs[0], runs[1], strict=True)]
    return {
        "questions": len(questions.items),
        "origins": questions.origins,
        "notes": questions.notes,
        "k": GATE_K,
        "tolerance": settings.KNOWLEDGE_RELEASE_GATE_TOLERANCE,
        "latency_ratio": settings.KNOWLEDGE_RELEASE_GATE_LATENCY_RATIO,
        **{name: {"release": r.pk, **m} for name, (r, m) in sides.items()},
        "regressions": _regressions(measured[0], measured[1]),
        "better": sum(1 for row in per_question if row["change"] == "better"),
        "worse": sum(1 for row in per_question if row["change"] == "worse"),
        "per_question": per_question,
        "decision": "promoted",
        "ran_at": timezone.now().isoformat(),
    }


def _regressions(serving: dict, candidate: dict) -> list[dict]:
    tolerance = settings.KNOWLEDGE_RELEASE_GATE_TOLERANCE
    found = []
    for name in QUALITY_METRICS:
        before, after = serving.get(name), candidate.get(name)
        if before is not None and after is not None and after < before - tolerance:
            found.append({"metric": name, "serving": before, "candidate": after})
    before, after = serving["latency_ms"]["p50"], candidate["latency_ms"]["p50"]
    ratio = settings.KNOWLEDGE_RELEASE_GATE_LATENCY_RATIO
    if after > before * ratio and after - before > LATENCY_FLOOR_MS:
        found.append({"metric": "latency_ms.p50", "serving": before, "candidate": after})
    return found


def _question_diff(serving: QuestionResult, candidate: QuestionResult) -> dict:
    """Better, worse or the same for one question: by the gold source's rank (answerable questions)
    or by whether the release refused (questions the documents cannot answer)."""
    question = serving.question
    row = {"id": question.id, "question": question.question[:300], "answerable": question.answerable}
    if question.answerable:
        before, after = _gold_rank(serving), _gold_rank(candidate)
        row.update(serving_rank=before, candidate_rank=after)
        score_before, score_after = (1 / before if before else 0.0), (1 / after if after else 0.0)
    else:
        before, after = _refused(serving), _refused(candidate)
        row.update(serving_refused=before, candidate_refused=after)
        score_before, score_after = float(before), float(after)
    row["change"] = (
        "better" if score_after > score_before else "worse" if score_after < score_before else "same"
    )
    return row


def _gold_rank(result: QuestionResult) -> int | None:
    expected = set(result.question.expected)
    return next((n for n, source in enumerate(result.ranked, start=1) if source in expected), None)


def _refused(result: QuestionResult) -> bool:
    return result.returned == 0 or not result.answerable
