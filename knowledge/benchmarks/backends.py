"""knowledge_bench backends: what each embedding backend costs in retrieval quality and gains in speed.

The chunks of one collection are re-embedded in memory with every backend
(nothing stored changes); each backend then answers the question set by exact
cosine search over its own vectors. Reported per backend: encoding chunks/s,
mean cosine to the torch (fp32) vectors, and dense recall@5 / MRR, all from
one run on the same texts.
"""

from __future__ import annotations

import json
import time

import numpy as np

from knowledge.clients.embedding import BACKENDS, embed_texts, get_model
from knowledge.evaluation import metrics
from knowledge.evaluation.questions import EvalQuestion, normalise
from knowledge.models import Chunk, Collection


def run(stdout, *, collection: Collection, questions: list[EvalQuestion], k: int = 5) -> dict:
    chunks = list(
        Chunk.objects.filter(collection=collection, chunk_profile_id=collection.chunk_profile_id)
        .select_related("document")
        .order_by("id")
    )
    texts = [c.content for c in chunks]
    sources = [(normalise(c.document.filename), normalise(c.source_ref)) for c in chunks]
    answerable = [q for q in questions if q.answerable]
    results, reference = {}, None
    for backend in BACKENDS:
        get_model(backend).encode(["warm up"], show_progress_bar=False)
        started = time.perf_counter()
        vectors = embed_texts(texts, backend=backend)
        seconds = time.perf_counter() - started
        queries = embed_texts([q.question for q in answerable], backend=backend)
        reference = vectors if reference is None else reference
        results[backend] = _quality(vectors, queries, answerable, sources, k) | {
            "chunks_per_s": round(len(texts) / seconds, 2),
            "cosine_to_torch": round(float(np.mean(np.sum(vectors * reference, axis=1))), 4),
        }
    figures = {
        "benchmark": "backends",
        "chunks": len(texts),
        "questions": len(answerable),
        "k": k,
        "backends": results,
    }
    for backend, r in results.items():
        stdout.write(
            f"{backend:<10} {r['chunks_per_s']:8.2f} chunks/s  cosine {r['cosine_to_torch']:.4f}  "
            f"recall@{k} {r[f'recall@{k}']:.4f}  mrr {r['mrr']:.4f}\n"
        )
    stdout.write(json.dumps(figures) + "\n")
    return figures


def _quality(vectors, queries, questions, sources, k) -> dict:
    recalls, ranks = [], []
    for question, query in zip(questions, queries, strict=True):
        order = np.argsort(-(vectors @ query))
        ranked = list(dict.fromkeys(sources[i] for i in order[:50]))
        top_k = {sources[i] for i in order[:k]}
        recalls.append(metrics.recall_at(question.expected, top_k))
        ranks.append(metrics.reciprocal_rank(question.expected, ranked))
    return {f"recall@{k}": round(metrics.mean(recalls), 4), "mrr": round(metrics.mean(ranks), 4)}
