"""knowledge_bench vectors: where each embedding model's vectors are stored, measured at N chunks.

Two layouts, on the same unit vectors in one run:

- ``shared`` (the product's, migration 0039): one table holding every model's chunks in an untyped
  ``vector`` column, a partial HNSW index per model on the column cast to the model's dimension, a
  search ordering by that cast expression. The table also holds another model's vectors (768
  dimensions, a fifth as many rows), as a deployment with two models does.
- ``per-model`` (seed 004's alternative): a table per model with a typed ``vector(384)`` column and
  a plain HNSW index on it.

Measured for each: loading N rows and building the index (seconds), writing WRITES more rows one
statement each with the index in place (rows/s; what ingestion does), and QUERIES nearest-50
searches (ms, median and p95, ``hnsw.ef_search`` as the product sets it). The tables are dropped
at the end. The vectors are random: the graphs are as hard for both layouts, which is what is
compared; absolute recall is ``knowledge_bench retrieve``'s business.
"""

from __future__ import annotations

import json
import statistics
import time

import numpy as np
from django.db import connection
from pgvector.psycopg import register_vector
from tqdm import tqdm

from knowledge.models.documents import HNSW_EF_CONSTRUCTION, HNSW_M

DIMENSIONS, OTHER_DIMENSIONS = 384, 768
MODEL, OTHER_MODEL = "bench/model-a", "bench/model-b"
SHARED, PER_MODEL = "bench_vectors_shared", "bench_vectors_model_a"
LIMIT = 50


def run(stdout, *, chunks: int, writes: int, queries: int, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    vectors = _unit(rng, chunks + writes, DIMENSIONS)
    others = _unit(rng, max(chunks // 5, 1), OTHER_DIMENSIONS)
    questions = _unit(rng, queries, DIMENSIONS)
    connection.ensure_connection()
    register_vector(connection.connection)  # numpy arrays as parameters, vectors in binary COPY
    layouts = {
        "shared": _shared(vectors[:chunks], others, vectors[chunks:], questions),
        "per-model": _per_model(vectors[:chunks], vectors[chunks:], questions),
    }
    figures = {"benchmark": "vectors", "chunks": chunks, "writes": writes, "queries": queries, **layouts}
    for name, row in layouts.items():
        built = row["load_s"] + row["index_s"]
        stdout.write(
            f"{name:<10} load+index {built:7.1f} s  writes {row['writes_per_s']:7.1f}/s  search p50 "
            f"{row['search_ms']['p50']:6.2f} ms  p95 {row['search_ms']['p95']:6.2f} ms  ({row['plan']})\n"
        )
    ratio = layouts["shared"]["search_ms"]["p50"] / layouts["per-model"]["search_ms"]["p50"]
    figures["shared_search_p50_ratio"] = round(ratio, 3)
    figures["shared_writes_ratio"] = round(
        layouts["shared"]["writes_per_s"] / layouts["per-model"]["writes_per_s"], 3
    )
    stdout.write(json.dumps(figures) + "\n")
    return figures


def _shared(vectors, others, extra, questions) -> dict:
    cast = f"(embedding::vector({DIMENSIONS}))"
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {SHARED}")
        cursor.execute(
            f"CREATE UNLOGGED TABLE {SHARED} (id bigserial PRIMARY KEY, model text, embedding vector)"
        )
    started = time.perf_counter()
    _copy(SHARED, [(MODEL, v) for v in vectors] + [(OTHER_MODEL, v) for v in others], "shared: load")
    loaded = time.perf_counter() - started
    index = (
        f"CREATE INDEX ON {SHARED} USING hnsw ({cast} vector_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE model = '{MODEL}'"
    )
    indexed = _timed(index)
    writes = _writes(f"INSERT INTO {SHARED} (model, embedding) VALUES ('{MODEL}', %s)", extra, "shared")
    search = (
        f"SELECT id FROM {SHARED} WHERE model = '{MODEL}' "
        f"ORDER BY {cast} <=> %s::vector({DIMENSIONS}) LIMIT {LIMIT}"
    )
    return _figures(loaded, indexed, writes, len(extra), _searches(search, questions, "shared"), SHARED)


def _per_model(vectors, extra, questions) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {PER_MODEL}")
        cursor.execute(
            f"CREATE UNLOGGED TABLE {PER_MODEL} (id bigserial PRIMARY KEY, embedding vector({DIMENSIONS}))"
        )
    started = time.perf_counter()
    _copy(PER_MODEL, [(v,) for v in vectors], "per-model: load", columns="embedding")
    loaded = time.perf_counter() - started
    index = (
        f"CREATE INDEX ON {PER_MODEL} USING hnsw (embedding vector_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
    )
    indexed = _timed(index)
    writes = _writes(f"INSERT INTO {PER_MODEL} (embedding) VALUES (%s)", extra, "per-model")
    search = f"SELECT id FROM {PER_MODEL} ORDER BY embedding <=> %s::vector({DIMENSIONS}) LIMIT {LIMIT}"
    return _figures(loaded, indexed, writes, len(extra), _searches(search, questions, "per-model"), PER_MODEL)


def _figures(loaded: float, indexed: float, writes: float, written: int, searched: tuple, table: str) -> dict:
    searches, plan = searched
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_total_relation_size('{table}')")
        size = cursor.fetchone()[0]
        cursor.execute(f"DROP TABLE {table}")
    return {
        "load_s": round(loaded, 2),
        "index_s": round(indexed, 2),
        "writes_per_s": round(written / writes, 1),
        "search_ms": {
            "p50": round(statistics.median(searches), 3),
            "p95": round(float(np.percentile(searches, 95)), 3),
        },
        "table_mb": round(size / 1e6, 1),
        "plan": plan,
    }


def _copy(table: str, rows: list[tuple], label: str, columns: str = "model, embedding") -> None:
    with (
        connection.connection.cursor() as raw,
        raw.copy(f"COPY {table} ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy,
    ):
        copy.set_types(["text", "vector"] if "," in columns else ["vector"])
        for row in tqdm(rows, desc=label, unit="row", mininterval=2):
            copy.write_row(row)


def _timed(sql: str) -> float:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql)
    return time.perf_counter() - started


def _writes(sql: str, rows, label: str) -> float:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for vector in tqdm(rows, desc=f"{label}: writes", unit="row", mininterval=2):
            cursor.execute(sql, [vector])
    return time.perf_counter() - started


def _searches(sql: str, questions, label: str) -> tuple[list[float], str]:
    """The searches' times, and how PostgreSQL ran them (the index scan, or not)."""
    timings = []
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {sql.split(' FROM ')[1].split()[0]}")  # the planner sees its rows
        cursor.execute("EXPLAIN " + sql, [questions[0]])
        plan = next((row[0].strip(" ->") for row in cursor.fetchall() if "Scan" in row[0]), "no scan")
        for vector in questions[:5]:  # warm the index's pages
            cursor.execute(sql, [vector])
        for vector in tqdm(questions, desc=f"{label}: searches", unit="query", mininterval=2):
            started = time.perf_counter()
            cursor.execute(sql, [vector])
            cursor.fetchall()
            timings.append((time.perf_counter() - started) * 1000)
    return timings, plan.split("  (")[0]


def _unit(rng, rows: int, dimensions: int) -> np.ndarray:
    vectors = rng.standard_normal((rows, dimensions)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
