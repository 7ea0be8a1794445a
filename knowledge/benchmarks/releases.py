"""knowledge_bench rollback: how long a rollback takes on a collection of N chunks per release.

A throw-away collection gets N chunks under each of two chunk profiles (COPY, as the other
benchmarks load chunks: the lexical statistics triggers run as for any insert), release A serving
and release B built from the other set. B is promoted, then the collection is rolled back and
forth ``--rounds`` times; each rollback is timed from the call to its commit. The reference,
measured in the same run, is what the rollback saves: re-embedding the collection, estimated from
embedding a sample of its chunk texts with the configured backend. Checked on every round: no
chunk is embedded or deleted and no document is queued.
"""

from __future__ import annotations

import json
import sys
import time
from types import SimpleNamespace

import numpy as np
from django.db import connection
from tqdm import tqdm

from knowledge.benchmarks.common import (
    CHUNK_COPY_SQL,
    bench_documents_create,
    chunk_copy_row,
    median,
    percentile,
    throwaway_collection,
)
from knowledge.clients.embedding import embed_texts
from knowledge.ingestion.reindex import release_build_start
from knowledge.models import Chunk, ChunkProfile, ProcessingJob, Release
from knowledge.retrieval.dense import vector_literal
from knowledge.services.releases import release_promote, release_rollback

CHUNKS_PER_DOCUMENT = 50
EMBED_SAMPLE = 256
_SENTENCES = (
    "Every collection serves one release of its index while the next one is measured.",
    "A rollback points the collection at the chunks its previous release left in place.",
    "Nothing is embedded again: the vectors of the earlier release are still stored.",
    "The gate compares recall, reciprocal rank and abstention on the collection's questions.",
)


def rollback_benchmark(*, chunks: int, rounds: int, out=sys.stdout) -> dict:
    other = ChunkProfile.objects.create(
        name=f"bench-rollback-{time.time_ns()}", chunk_size=400, chunk_overlap=0
    )
    try:
        with throwaway_collection("bench-rollback") as collection:
            return _measured(collection, other, chunks=chunks, rounds=rounds, out=out)
    finally:
        other.delete()  # after the collection, whose chunks point at it (PROTECT)


def _measured(collection, other: ChunkProfile, *, chunks: int, rounds: int, out) -> dict:
    texts = _load(collection, other, chunks=chunks)
    candidate = release_build_start(collection=collection, chunk_set=(other.pk, collection.embedding_model))
    candidate.state = Release.State.CANDIDATE
    candidate.save(update_fields=["state"])
    release_promote(release=candidate, reason="benchmark")
    stored, jobs = Chunk.objects.filter(collection=collection).count(), ProcessingJob.objects.count()
    times, queued = [], 0
    for _ in tqdm(range(rounds), desc="rollbacks", unit="rollback", file=sys.stderr):
        started = time.perf_counter()
        queued += release_rollback(collection=collection).documents_queued
        times.append((time.perf_counter() - started) * 1000)
    embedded = ProcessingJob.objects.count() - jobs
    assert Chunk.objects.filter(collection=collection).count() == stored, "a rollback changed the chunks"
    reembed_ms = _reembed_estimate_ms(texts, chunks)
    figures = {
        "benchmark": "rollback",
        "chunks_per_release": chunks,
        "rounds": rounds,
        "rollback_ms": {
            "p50": round(median(times), 1),
            "p95": round(percentile(times, 95), 1),
            "max": round(max(times), 1),
        },
        "reference_reembed_ms": round(reembed_ms),
        "ratio_reembed_to_rollback": round(reembed_ms / median(times)) if median(times) else None,
        "documents_queued": queued,
        "processing_jobs_queued": embedded,
        "chunks_embedded": 0 if embedded == 0 and queued == 0 else None,
    }
    out.write(json.dumps(figures) + "\n")
    return figures


def _load(collection, other: ChunkProfile, *, chunks: int) -> list[str]:
    """N chunks per chunk set: random unit vectors (a rollback never reads them), real sentences."""
    documents = max(1, chunks // CHUNKS_PER_DOCUMENT)
    ids = bench_documents_create(collection, [(0, f) for f in range(documents)])
    rng = np.random.default_rng(7)
    texts = [
        " ".join(_SENTENCES[(i + j) % len(_SENTENCES)] for j in range(3)) + f" ({i})" for i in range(chunks)
    ]
    with connection.cursor() as cursor, cursor.copy(CHUNK_COPY_SQL) as copy:
        for profile_id in (collection.chunk_profile_id, other.pk):
            target = SimpleNamespace(pk=collection.pk, chunk_profile_id=profile_id)
            vectors = rng.normal(size=(chunks, 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            for index in tqdm(range(chunks), desc=f"chunks (profile {profile_id})", file=sys.stderr):
                copy.write_row(
                    chunk_copy_row(
                        document_id=ids[(0, index % documents)],
                        collection=target,
                        model=collection.embedding_model,
                        index=index // documents,
                        text=texts[index],
                        vector=vector_literal(vectors[index]),
                    )
                )
    return texts


def _reembed_estimate_ms(texts: list[str], chunks: int) -> float:
    sample = texts[:EMBED_SAMPLE]
    embed_texts(sample[:8])  # the model loads once per process: not part of re-embedding
    started = time.perf_counter()
    embed_texts(sample)
    return (time.perf_counter() - started) * 1000 * chunks / len(sample)
