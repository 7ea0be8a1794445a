"""knowledge_bench models: every embedding model a collection may choose, measured in one run.

Each model (bundled and registered endpoints, or those named) runs in a process of its own, so its
peak memory is its own. There the question sets' documents are cut into the naive pipeline's
windows (../shared/eval/naive_rag.py: 1,000 characters every 800 of each section) and embedded
with the model; each set's answerable questions are then answered by the naive pipeline with this
model as its dense half (reciprocal-rank fusion, weight 0.7, with bm25s over the same windows) and
by the dense search alone: recall@5 and MRR. With all-MiniLM-L6-v2 that pipeline is the naive
pipeline itself, so its row is the reference every ratio is against. Speed: windows per second
while embedding (longest first, the configured batch size), each question's latency asked one at a
time with the per-process cache cleared (median, p95), peak RSS after loading and at the end.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from knowledge.clients.embedding import embed_question, embed_texts, query_cache_clear
from knowledge.clients.embedding_registry import MINILM, embedding_model_info, embedding_model_names
from knowledge.evaluation import metrics
from knowledge.evaluation.questions import EvalQuestion, load_questions, normalise
from knowledge.ingestion.extract import extract_sections

K = 5
FUSION_WEIGHT = 0.7  # naive_rag.py's dense share of the fusion
RRF_K = 60
DEPTH = 50
WINDOW, STEP = 1000, 800
TABLE_START = "<!-- knowledge_bench models: table -->"
TABLE_END = "<!-- knowledge_bench models: end -->"


@dataclass(frozen=True)
class QuestionSet:
    name: str
    questions: Path
    files: Path  # one document path a line, relative to the project root or absolute

    @classmethod
    def parse(cls, text: str) -> QuestionSet:
        name, questions, files = text.split(":", 2)
        return cls(name, Path(questions), Path(files))


def run(stdout, *, sets: list[QuestionSet], models: list[str] | None, docs: Path | None) -> dict:
    """Each model measured in a child process; the table printed (and written into ``docs``)."""
    models = models or embedding_model_names()
    rows = []
    for model in models:
        stdout.write(f"measuring {model} ...\n")
        rows.append(_child(model, sets))
    table = markdown_table(rows, sets)
    stdout.write(table + "\n")
    if docs is not None:
        _write_table(docs, table)
    figures = {"benchmark": "models", "sets": [s.name for s in sets], "models": rows}
    stdout.write(json.dumps(figures) + "\n")
    return figures


def _child(model: str, sets: list[QuestionSet]) -> dict:
    arguments = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "knowledge_bench", "models"]
    arguments += [a for s in sets for a in ("--set", f"{s.name}:{s.questions}:{s.files}")]
    done = subprocess.run(
        [*arguments, "--models", model, "--one"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"model": model, "error": (done.stderr.strip().splitlines() or ["failed"])[-1][:300]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_one(stdout, *, model: str, sets: list[QuestionSet], queries_timed: int = 30) -> dict:
    """The figures of one model, in this process (the parent's child): one JSON line."""
    info = embedding_model_info(model)
    embed_texts(["warm up"], model=model)  # loaded outside the timings
    loaded = _peak_rss_mb()
    row = {"model": model, "dimensions": info.dimensions, "sets": {}, "windows": 0, "seconds": 0.0}
    latencies = []
    for question_set in sets:
        windows = naive_windows(_files(question_set.files))
        started = time.perf_counter()
        vectors = embed_texts([text for _, _, text in windows], model=model)
        row["seconds"] += time.perf_counter() - started
        row["windows"] += len(windows)
        answerable = [q for q in load_questions(question_set.questions).questions if q.answerable]
        query_cache_clear()
        asked = []
        for question in answerable:
            begun = time.perf_counter()
            asked.append(embed_question(question.question, info))
            latencies.append((time.perf_counter() - begun) * 1000)
        row["sets"][question_set.name] = _quality(np.stack(asked), vectors, windows, answerable)
    row["windows_per_s"] = round(row["windows"] / row["seconds"], 2) if row["seconds"] else None
    row["query_ms"] = {
        "p50": round(statistics.median(latencies), 2),
        "p95": round(float(np.percentile(latencies, 95)), 2),
    }
    row["rss_mb"] = {"loaded": round(loaded), "peak": round(_peak_rss_mb())}
    stdout.write(json.dumps(row) + "\n")
    return row


def naive_windows(paths: list[Path]) -> list[tuple[str, str, str]]:
    """(document, source reference, text) windows of every section, as naive_rag.py cuts them."""
    windows = []
    for path in sorted({p.name: p for p in paths}.values(), key=lambda p: p.name):
        for section in extract_sections(path.name, path.read_bytes()):
            text = " ".join(section.text.split())
            for start in range(0, max(len(text), 1), STEP):
                if text[start : start + WINDOW].strip():
                    windows.append((path.name, section.source_ref, text[start : start + WINDOW]))
    return windows


def _quality(queries: np.ndarray, vectors: np.ndarray, windows, questions: list[EvalQuestion]) -> dict:
    import bm25s

    texts = [text for _, _, text in windows]
    keys = [(normalise(document), normalise(ref)) for document, ref, _ in windows]
    index = bm25s.BM25()
    index.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    lexical, _ = index.retrieve(
        bm25s.tokenize([q.question for q in questions], stopwords="en", show_progress=False),
        k=min(DEPTH, len(texts)),
        show_progress=False,
    )
    similarities = queries @ vectors.T
    dense, hybrid = [], []
    for i, question in enumerate(questions):
        by_cosine = list(np.argsort(-similarities[i])[:DEPTH])
        dense.append(_scored(question, [keys[j] for j in by_cosine]))
        fused = _fused(by_cosine, list(lexical[i]))
        hybrid.append(_scored(question, [keys[j] for j in fused]))
    return {"hybrid": _mean(hybrid), "dense": _mean(dense), "questions": len(questions)}


def _fused(dense: list[int], lexical: list[int]) -> list[int]:
    score: dict[int, float] = defaultdict(float)
    for rank, i in enumerate(dense):
        score[i] += FUSION_WEIGHT / (RRF_K + rank + 1)
    for rank, i in enumerate(lexical):
        score[i] += (1 - FUSION_WEIGHT) / (RRF_K + rank + 1)
    return sorted(score, key=lambda i: -score[i])[:DEPTH]


def _scored(question: EvalQuestion, ranked: list[tuple[str, str]]) -> tuple[float, float]:
    return metrics.recall_at(question.expected, ranked[:K]), metrics.reciprocal_rank(
        question.expected, ranked
    )


def _mean(pairs: list[tuple[float, float]]) -> dict:
    return {
        f"recall@{K}": round(metrics.mean([p[0] for p in pairs]), 3),
        "mrr": round(metrics.mean([p[1] for p in pairs]), 3),
    }


def markdown_table(rows: list[dict], sets: list[QuestionSet]) -> str:
    """One row per model: each set's hybrid and dense recall@5 / MRR, speed against MiniLM's, memory."""
    reference = next((r for r in rows if r["model"] == MINILM and "error" not in r), None)
    head = ["model", "dims"] + [f"{s.name}: hybrid / dense r@5, MRR" for s in sets]
    head += ["windows/s (× MiniLM)", "question ms p50 / p95", "RSS MB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['model']} | failed: {row['error']} |")
            continue
        cells = [row["model"], str(row["dimensions"])]
        for s in sets:
            figures = row["sets"][s.name]
            hybrid, dense = figures["hybrid"], figures["dense"]
            cells.append(
                f"{hybrid['recall@5']:.3f}, {hybrid['mrr']:.3f} / {dense['recall@5']:.3f}, {dense['mrr']:.3f}"
            )
        ratio = f" ({row['windows_per_s'] / reference['windows_per_s']:.2f})" if reference else ""
        cells += [
            f"{row['windows_per_s']}{ratio}",
            f"{row['query_ms']['p50']} / {row['query_ms']['p95']}",
            str(row["rss_mb"]["peak"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _write_table(docs: Path, table: str) -> None:
    text = docs.read_text("utf-8")
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    docs.write_text(text[:start] + "\n" + table + "\n" + text[end:], "utf-8")


def _files(listing: Path) -> list[Path]:
    root = Path(settings.BASE_DIR)
    paths = [Path(line.strip()) for line in listing.read_text().splitlines() if line.strip()]
    return [p if p.is_absolute() else root / p for p in paths]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
