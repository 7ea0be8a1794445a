#!/usr/bin/env python3
"""Which ranking stage wins or loses against the naive pipeline: the product's own chunks, searched
outside the database under stage variants, beside ../shared/eval/naive_rag.py's pipeline.

Every variant reads the same chunks (the default chunk profile's drafts, with their contextual
headers) and the same questions, so a row differs from the next by one stage:

- what the dense search embeds: the chunk with its header (the product) or its text alone;
- how the two searches are fused: by scores over the best hit (the product's scoreFusion), by
  min-max scores, or by weighted Reciprocal Rank Fusion;
- spreadSources on or off.

The lexical side is BM25 (bm25s, Snowball English stems, stop words) over the chunks' text, an
approximation of the product's PostgreSQL BM25; the product's real figures come from
scripts/side_by_side.py. Every text is embedded with the naive pipeline's encoder (the same
MiniLM), each vector cached on disk by its text (side_by_side.cached_embeddings).

    .venv/bin/python scripts/rank_ablation.py --set NAME:QUESTIONS:FILES_LIST ... [--rows rows.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from django.conf import settings

# side_by_side sets up Django (its first lines) and holds the naive pipeline's windows and the
# on-disk cache of vectors, shared here so both scripts measure the same naive side.
from side_by_side import ROOT, cached_embeddings
from side_by_side import naive_chunks as naive_windows

from knowledge.evaluation.questions import load_questions, normalise
from knowledge.ingestion.drafts import ChunkingOptions, document_drafts
from knowledge.ingestion.headers import embedding_text
from knowledge.ingestion.titles import document_title

K = 10
CANDIDATES = 100


def product_chunks(paths: list[Path]) -> list[dict]:
    options = ChunkingOptions(strategy="paragraph", chunk_size=1000, chunk_overlap=200)
    chunks = []
    for path in paths:
        data = path.read_bytes()
        title = document_title(path.name, data)
        for _, draft in document_drafts(
            filename=path.name,
            data=data,
            title=title,
            options=options,
            limits=settings.KNOWLEDGE_INGEST_LIMITS,
        ):
            chunks.append(
                {
                    "document": path.name,
                    "ref": draft.section.source_ref,
                    "content": draft.content,
                    "header": draft.header,
                }
            )
    return chunks


def naive_chunks(paths: list[Path]) -> list[dict]:
    return [{"document": name, "ref": ref, "content": text} for name, ref, text in naive_windows(paths)]


def bm25_rankings(chunks: list[dict], questions: list[str], *, stem: bool) -> list[list[tuple[int, float]]]:
    import bm25s
    import snowballstemmer

    stemmer = snowballstemmer.stemmer("english") if stem else None
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([c["content"] for c in chunks], stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    tokens = bm25s.tokenize(questions, stopwords="en", stemmer=stemmer, show_progress=False)
    ids, scores = retriever.retrieve(tokens, k=min(CANDIDATES, len(chunks)), show_progress=False)
    return [
        [(int(i), float(s)) for i, s in zip(row_ids, row_scores, strict=True) if s > 0]
        for row_ids, row_scores in zip(ids, scores, strict=True)
    ]


def dense_rankings(vectors: np.ndarray, queries: np.ndarray) -> list[list[tuple[int, float]]]:
    similarities = queries @ vectors.T
    out = []
    for row in similarities:
        top = np.argsort(-row)[:CANDIDATES]
        out.append([(int(i), float(row[i])) for i in top])
    return out


def fuse(dense, lexical, *, method: str, weight: float) -> list[int]:
    if method == "dense":
        return [i for i, _ in dense]
    if method == "rrf":
        scores = defaultdict(float)
        for rank, (i, _) in enumerate(dense, start=1):
            scores[i] += weight / (60 + rank)
        for rank, (i, _) in enumerate(lexical, start=1):
            scores[i] += (1 - weight) / (60 + rank)
    else:
        scores = defaultdict(float)
        for hits, share in ((dense, weight), (lexical, 1 - weight)):
            if not hits:
                continue
            values = [max(s, 0.0) for _, s in hits]
            top = max(values) or 1.0
            low = min(values) if method == "minmax" else 0.0
            span = (top - low) or 1.0
            for (i, _), value in zip(hits, values, strict=True):
                scores[i] += share * (value - low) / span
    return sorted(scores, key=lambda i: -scores[i])


def spread(order: list[int], chunks: list[dict]) -> list[int]:
    seen: dict = {}
    keyed = []
    for position, i in enumerate(order):
        source = (chunks[i]["document"], chunks[i]["ref"])
        seen[source] = seen.get(source, 0) + 1
        keyed.append((seen[source], position, i))
    return [i for *_, i in sorted(keyed)]


def scored(order: list[int], chunks: list[dict], expected: set) -> tuple[float, float, int | None]:
    keys = [(normalise(chunks[i]["document"]), normalise(chunks[i]["ref"])) for i in order[:K]]
    recall = len(expected & set(keys[:5])) / len(expected)
    rank = next((j + 1 for j, key in enumerate(keys) if key in expected), None)
    return recall, (1 / rank if rank else 0.0), rank


VARIANTS = [
    # (label, chunks, dense embedded text, fusion, weight, spread)
    ("naive rrf 0.7", "naive", "content", "rrf", 0.7, False),
    ("naive dense", "naive", "content", "dense", 1.0, False),
    ("product: header, score 0.65, spread", "product", "header", "score", 0.65, True),
    ("header, rrf 0.7, spread", "product", "header", "rrf", 0.7, True),
    ("header, minmax 0.65, spread", "product", "header", "minmax", 0.65, True),
    ("header, dense only", "product", "header", "dense", 1.0, True),
    ("text only, score 0.65, spread", "product", "content", "score", 0.65, True),
    ("text only, rrf 0.7, spread", "product", "content", "rrf", 0.7, True),
    ("text only, dense only", "product", "content", "dense", 1.0, True),
    ("header, score 0.65, no spread", "product", "header", "score", 0.65, False),
]


def run_set(name: str, questions_path: str, files_list: str, rows) -> None:
    paths = [Path(line.strip()) for line in Path(files_list).read_text().splitlines() if line.strip()]
    paths = [p if p.is_absolute() else ROOT / p for p in paths]
    questions = [q for q in load_questions(Path(questions_path)).questions if q.expected]
    texts = [q.question for q in questions]
    queries = cached_embeddings(texts)
    corpora = {"product": product_chunks(paths), "naive": naive_chunks(paths)}
    print(f"{name}: {len(questions)} answerable, {len(corpora['product'])} product chunks", file=sys.stderr)
    searches = {}
    for kind, chunks in corpora.items():
        lexical = bm25_rankings(chunks, texts, stem=kind == "product")
        for embedded in ("content", "header"):
            if kind == "naive" and embedded == "header":
                continue
            source = [
                embedding_text(c.get("header", ""), c["content"]) if embedded == "header" else c["content"]
                for c in chunks
            ]
            vectors = cached_embeddings(source)
            searches[(kind, embedded)] = (dense_rankings(vectors, queries), lexical)
    for label, kind, embedded, method, weight, spreading in VARIANTS:
        chunks = corpora[kind]
        dense, lexical = searches[(kind, embedded)]
        recall_sum = rr_sum = 0.0
        for qi, question in enumerate(questions):
            order = fuse(dense[qi], lexical[qi], method=method, weight=weight)
            if spreading:
                order = spread(order, chunks)
            expected = set(question.expected)
            recall, rr, rank = scored(order, chunks, expected)
            recall_sum += recall
            rr_sum += rr
            if rows:
                rows.write(
                    json.dumps({"set": name, "variant": label, "id": question.id, "rank": rank}) + "\n"
                )
        n = len(questions)
        print(f"| {name} | {label} | {recall_sum / n:.3f} / {rr_sum / n:.3f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", action="append", required=True, help="NAME:QUESTIONS:FILES_LIST")
    parser.add_argument("--rows", help="write one JSON line per (set, variant, question): the gold rank")
    args = parser.parse_args()
    rows = open(args.rows, "w") if args.rows else None
    print("| set | variant | recall@5 / MRR |\n|---|---|---|")
    for spec in args.set:
        run_set(*spec.split(":"), rows)
    if rows:
        rows.close()


if __name__ == "__main__":
    main()
