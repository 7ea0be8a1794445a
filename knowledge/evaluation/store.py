"""Stored evaluation sets and runs: import (JSON Lines or BEIR), record, chart.

Services for writes follow the project convention (keyword-only, ``<entity>_<action>``);
the management commands and the admin call these.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from knowledge.access import question_scope_checked
from knowledge.evaluation.questions import EvalQuestion as LoadedQuestion
from knowledge.evaluation.questions import load_questions, parse_question
from knowledge.evaluation.runner import run_retrieval, summarise
from knowledge.models import Chunk, ChunkProfile, Collection, EvalQuestion, EvalRun, EvalSet, Profile
from knowledge.task_queues import long_work_queue, task_queue

CHART_METRICS = ("recall@1", "recall@3", "recall@5", "recall@10", "mrr", "ndcg@10")
# Shown when a compared run has them: answer quality, and how the agentic loop worked (all 0-1).
OPTIONAL_CHART_METRICS = (
    "abstention_accuracy",
    "citation_hit_rate",
    "composite",
    "rewrite_rate",
    "retry_rate",
    "hallucination_detection_rate",
    "graded_relevant_ratio",
)


def eval_set_import(*, name: str, path: Path) -> tuple[EvalSet, list[tuple[int, str]]]:
    """Import a JSON Lines question set into EvalSet ``name``, replacing its questions.

    Invalid lines are skipped and returned as (line number, message), as
    ``load_questions`` reports them. With no valid question nothing is replaced.
    """
    loaded = load_questions(Path(path))
    if not loaded.questions:
        eval_set, _ = EvalSet.objects.get_or_create(name=name)
        return eval_set, loaded.errors
    return eval_set_replace(name=name, questions=_raw_questions(Path(path), loaded.questions)), loaded.errors


def eval_set_replace(*, name: str, questions: list[dict], description: str | None = None) -> EvalSet:
    """Create or update EvalSet ``name`` with exactly ``questions`` (EvalQuestion field dicts), atomically."""
    with transaction.atomic():
        eval_set, _ = EvalSet.objects.select_for_update().get_or_create(name=name)
        if description is not None:
            eval_set.description = description
            eval_set.save(update_fields=["description"])
        eval_set.questions.all().delete()
        EvalQuestion.objects.bulk_create(EvalQuestion(eval_set=eval_set, **q) for q in questions)
    return eval_set


def _raw_questions(path: Path, valid: list[LoadedQuestion]) -> list[dict]:
    """The valid questions with their expected sources as written (not normalised), in file order."""
    originals = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                parsed = parse_question(line)
            except ValueError:
                continue
            originals.setdefault(parsed.id, json.loads(line)["expected_sources"])
    return [
        {
            "external_id": q.id,
            "question": q.question,
            "expected_sources": [
                {"document": s["document"], "source_ref": s["source_ref"]} for s in originals.get(q.id, [])
            ]
            or [{"document": d, "source_ref": r} for d, r in q.expected],
            "answer": q.answer,
            "kind": q.kind,
        }
        for q in valid
    ]


def eval_set_import_beir(
    *, name: str, folder: Path, corpus_out: Path | None = None
) -> tuple[EvalSet, list[tuple[int, str]]]:
    """Import a BEIR-format folder into EvalSet ``name``, replacing its questions.

    Reads ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
    (``_id``, ``text``) and ``qrels/test.tsv`` (header ``query-id corpus-id
    score``; rows with score > 0 are relevant). Only queries with at least one
    relevant document are imported, each with ``kind="beir"``.

    Mapping of a relevant corpus document to an expected source::

        {"document": f"{corpus_id}.txt", "source_ref": f"section={title or corpus_id}"}

    With ``corpus_out``, every corpus document is written as
    ``corpus_out/{corpus_id}.txt`` so ``knowledge_ingest`` can load it and the
    TXT extractor yields exactly that reference: a titled document starts with
    its title underlined by ``=`` (a reStructuredText title, so the section is
    ``section=TITLE``); an untitled one has no title line, so its single
    section is named after the file stem (``section=CORPUS_ID``). Titles are
    written on one line with whitespace collapsed; matching forgives only
    whitespace and case.

    Errors are (line number, message) for ``queries.jsonl`` / ``corpus.jsonl``
    lines and (line number, "qrels: ...") for qrels rows.
    """
    folder = Path(folder)
    errors: list[tuple[int, str]] = []
    corpus = _beir_jsonl(folder / "corpus.jsonl", errors, "corpus")
    queries = _beir_jsonl(folder / "queries.jsonl", errors, "queries")
    qrels = _beir_qrels(folder / "qrels" / "test.tsv", errors)
    questions = []
    for query_id, corpus_ids in qrels.items():
        if query_id not in queries:
            errors.append((0, f"qrels: unknown query-id {query_id!r}"))
            continue
        expected = [_beir_source(cid, corpus.get(cid, {}).get("title", "")) for cid in corpus_ids]
        questions.append(
            {
                "external_id": query_id,
                "question": str(queries[query_id].get("text", "")).strip(),
                "expected_sources": expected,
                "answer": "",
                "kind": "beir",
            }
        )
    questions = [q for q in questions if q["question"]]
    if corpus_out is not None:
        beir_corpus_write(corpus=corpus, folder=Path(corpus_out))
    return eval_set_replace(name=name, questions=questions), errors


def _beir_source(corpus_id: str, title: str) -> dict:
    title = _one_line(title)
    return {"document": f"{corpus_id}.txt", "source_ref": f"section={title or corpus_id}"}


def _one_line(text) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def beir_corpus_write(*, corpus: dict[str, dict], folder: Path) -> int:
    """Write each corpus document as ``{id}.txt`` in ``folder`` (see eval_set_import_beir); count them."""
    folder.mkdir(parents=True, exist_ok=True)
    for corpus_id, doc in corpus.items():
        title = _one_line(doc.get("title"))
        body = str(doc.get("text") or "").strip() or title or corpus_id
        head = f"{title}\n{'=' * max(len(title), 3)}\n\n" if title else ""
        (folder / f"{corpus_id}.txt").write_text(head + body + "\n", encoding="utf-8")
    return len(corpus)


def _beir_jsonl(path: Path, errors: list, label: str) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    if not path.is_file():
        errors.append((0, f"{label}: {path} is missing"))
        return rows
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict) or not str(data.get("_id", "")).strip():
                    raise ValueError('each line must be an object with "_id"')
            except ValueError as exc:
                errors.append((number, f"{label}: {exc}"))
                continue
            rows[str(data["_id"]).strip()] = data
    return rows


def _beir_qrels(path: Path, errors: list) -> dict[str, list[str]]:
    relevant: dict[str, list[str]] = {}
    if not path.is_file():
        errors.append((0, f"qrels: {path} is missing"))
        return relevant
    reader = csv.reader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t")
    for number, row in enumerate(reader, start=1):
        if not row or (number == 1 and row[0].strip().lower() == "query-id"):
            continue
        try:
            query_id, corpus_id, score = (cell.strip() for cell in row[:3])
            if float(score) > 0:
                relevant.setdefault(query_id, []).append(corpus_id)
        except ValueError:
            errors.append((number, f"qrels: expected query-id, corpus-id, score; got {row!r}"))
    return relevant


def eval_set_questions(*, eval_set: EvalSet) -> list[LoadedQuestion]:
    """The stored questions as the runner's EvalQuestion objects."""
    return [
        parse_question(
            json.dumps(
                {
                    "id": q.external_id,
                    "question": q.question,
                    "expected_sources": q.expected_sources,
                    "answer": q.answer,
                    "kind": q.kind,
                }
            )
        )
        for q in eval_set.questions.order_by("pk")
    ]


@dataclass(frozen=True)
class RunScope:
    """What a stored run searched, and how: the collection or the profile, the chunk profile (the
    collection's active one at run time when None), the run's ``--set`` overrides, and whether the
    questions were answered too."""

    collection: Collection | None = None
    profile: Profile | None = None
    chunk_profile: ChunkProfile | None = None
    settings: dict = field(default_factory=dict)
    with_answers: bool = False


def eval_run_record(
    *, eval_set: EvalSet, metrics: dict, k: int, scope: RunScope | None = None, created_by=None
) -> EvalRun:
    """Store one run. The chunk profile defaults to the scope's collection's active profile now."""
    scope = scope or RunScope()
    chunk_profile = scope.chunk_profile
    if chunk_profile is None and scope.collection is not None:
        chunk_profile = scope.collection.chunk_profile
    return EvalRun.objects.create(
        eval_set=eval_set,
        collection=scope.collection,
        profile=scope.profile,
        chunk_profile=chunk_profile,
        k=k,
        settings=dict(scope.settings or {}),
        with_answers=scope.with_answers,
        metrics=json.loads(json.dumps(metrics)),
        created_by=created_by if getattr(created_by, "pk", None) else None,
    )


def eval_runs_chart_svg(runs) -> str:
    """A grouped bar chart (one group per metric, one colour per run) as SVG text."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    runs = list(runs)
    names = list(CHART_METRICS) + [
        m for m in OPTIONAL_CHART_METRICS if any(run.metrics.get(m) is not None for run in runs)
    ]
    figure = Figure(figsize=(max(6, 1.1 * len(names) + 0.3 * len(runs)), 4))
    axes = figure.subplots()
    width = 0.8 / max(len(runs), 1)
    for index, run in enumerate(runs):
        values = [float(run.metrics.get(m) or 0.0) for m in names]
        positions = [i + (index - (len(runs) - 1) / 2) * width for i in range(len(names))]
        axes.bar(positions, values, width, label=run.label)
    axes.set_xticks(range(len(names)), [m.replace("_accuracy", "") for m in names])
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("score")
    axes.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1)
    buffer = io.StringIO()
    # Text stays <text> (not glyph paths), so labels are searchable and selectable.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "knowledge-eval"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight")
    return buffer.getvalue()


EVALUATION_TASK = "knowledge.tasks.run_evaluation"


def eval_run_start(*, eval_set: EvalSet, collection, k: int, created_by) -> str:
    """Queue one evaluation of ``eval_set`` on ``collection`` for a worker (it can take minutes);
    returns the task id. The run is recorded when it finishes (``eval_run_collection``)."""
    return task_queue(
        EVALUATION_TASK,
        eval_set.pk,
        collection.pk,
        k,
        getattr(created_by, "pk", None),
        queue=long_work_queue(),
        task_name=f"evaluate {eval_set.name} on {collection.name}"[:100],
        group="evaluation",
    )


def eval_run_collection(*, eval_set: EvalSet, collection, k: int, created_by=None) -> EvalRun:
    """Evaluate ``eval_set`` on ``collection`` as its owner sees it (access rules apply); record the run."""
    questions = eval_set_questions(eval_set=eval_set)
    if not questions:
        raise ValueError(f"the evaluation set {eval_set.name!r} has no questions")
    owner = collection.owner
    asked = question_scope_checked(user=owner, collection_ids=[collection.pk])
    results = run_retrieval(questions, user=owner, asked=asked, k=k)
    return eval_run_record(
        eval_set=eval_set,
        metrics=summarise(results, k=k),
        k=k,
        scope=RunScope(collection=collection),
        created_by=created_by,
    )


def eval_chunk_profiles_compare(
    *, eval_set: EvalSet, collection, chunk_profiles, user, k: int = 10, created_by=None
) -> list[EvalRun]:
    """Evaluate ``eval_set`` on ``collection`` once per chunk profile that has chunks there; record each run.

    Chunks are kept per profile, so a non-active profile's set can be searched
    (``chunk_profile_id`` override) without re-indexing. ``metrics["chunks_searched"]``
    is the size of the chunk set each run searched. Profiles without chunks
    in the collection are skipped.
    """
    questions = eval_set_questions(eval_set=eval_set)
    runs = []
    for chunk_profile in dict.fromkeys(chunk_profiles):
        searched = Chunk.objects.filter(collection=collection, chunk_profile=chunk_profile).count()
        if not searched or not questions:
            continue
        asked = question_scope_checked(user=user, collection_ids=[collection.pk])
        results = run_retrieval(
            questions, user=user, asked=asked.on_chunk_set(chunk_profile_id=chunk_profile.pk), k=k
        )
        metrics = {**summarise(results, k=k), "chunks_searched": searched}
        runs.append(
            eval_run_record(
                eval_set=eval_set,
                metrics=metrics,
                k=k,
                scope=RunScope(collection=collection, chunk_profile=chunk_profile),
                created_by=created_by,
            )
        )
    return runs
