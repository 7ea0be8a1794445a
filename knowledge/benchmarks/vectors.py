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
from dataclasses import dataclass

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
    layouts = {name: Layout(name, *sql) for name, sql in LAYOUTS.items()}
    try:
        built = {name: layout.build(vectors[:chunks], others) for name, layout in layouts.items()}
        # Writes and searches alternate between the layouts, row by row and query by query, so that
        # whatever else the machine does meanwhile weighs on both alike.
        written = _alternated(layouts, "write", vectors[chunks:])
        searched = _alternated(layouts, "search", questions)
        figures = {
            name: layout.figures(built[name], written[name], searched[name], probe=questions[0])
            for name, layout in layouts.items()
        }
    finally:
        for layout in layouts.values():
            layout.drop()
    return _report(stdout, figures, chunks=chunks, writes=writes, queries=queries)


def _report(stdout, layouts: dict, **counts) -> dict:
    for name, row in layouts.items():
        built = row["load_s"] + row["index_s"]
        stdout.write(
            f"{name:<10} load+index {built:7.1f} s  writes {row['writes_per_s']:7.1f}/s  search p50 "
            f"{row['search_ms']['p50']:6.2f} ms  p95 {row['search_ms']['p95']:6.2f} ms  ({row['plan']})\n"
        )
    shared, own = layouts["shared"], layouts["per-model"]
    figures = {"benchmark": "vectors", **counts, **layouts}
    figures["shared_search_p50_ratio"] = round(shared["search_ms"]["p50"] / own["search_ms"]["p50"], 3)
    figures["shared_writes_ratio"] = round(shared["writes_per_s"] / own["writes_per_s"], 3)
    stdout.write(json.dumps(figures) + "\n")
    return figures


_CAST = f"(embedding::vector({DIMENSIONS}))"
_INDEX_WITH = f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
_NEAREST = f"<=> %s::vector({DIMENSIONS}) LIMIT {LIMIT}"
# name: (table, create, index, insert, search); the shared table's rows carry their model.
LAYOUTS = {
    "shared": (
        SHARED,
        f"CREATE UNLOGGED TABLE {SHARED} (id bigserial PRIMARY KEY, model text, embedding vector)",
        f"CREATE INDEX ON {SHARED} USING hnsw ({_CAST} vector_cosine_ops) {_INDEX_WITH}"
        f" WHERE model = '{MODEL}'",
        f"INSERT INTO {SHARED} (model, embedding) VALUES ('{MODEL}', %s)",
        f"SELECT id FROM {SHARED} WHERE model = '{MODEL}' ORDER BY {_CAST} {_NEAREST}",
    ),
    "per-model": (
        PER_MODEL,
        f"CREATE UNLOGGED TABLE {PER_MODEL} (id bigserial PRIMARY KEY, embedding vector({DIMENSIONS}))",
        f"CREATE INDEX ON {PER_MODEL} USING hnsw (embedding vector_cosine_ops) {_INDEX_WITH}",
        f"INSERT INTO {PER_MODEL} (embedding) VALUES (%s)",
        f"SELECT id FROM {PER_MODEL} ORDER BY embedding {_NEAREST}",
    ),
}


@dataclass
class Layout:
    name: str
    table: str
    create_sql: str
    index_sql: str
    insert_sql: str
    search_sql: str

    def build(self, vectors, others) -> tuple[float, float]:
        """Load the rows (the shared table also another model's) and build the index: seconds each."""
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {self.table}")
            cursor.execute(self.create_sql)
        started = time.perf_counter()
        if self.table == SHARED:
            rows = [(MODEL, v) for v in vectors] + [(OTHER_MODEL, v) for v in others]
            _copy(self.table, rows, f"{self.name}: load")
        else:
            _copy(self.table, [(v,) for v in vectors], f"{self.name}: load", columns="embedding")
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(self.index_sql)
            cursor.execute(f"ANALYZE {self.table}")  # the planner sees its rows
        return loaded, time.perf_counter() - started

    def write(self, cursor, vector) -> None:
        cursor.execute(self.insert_sql, [vector])

    def search(self, cursor, vector) -> None:
        cursor.execute(self.search_sql, [vector])
        cursor.fetchall()

    def plan(self, vector) -> str:
        """How PostgreSQL runs the search: the index scan, or not."""
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + self.search_sql, [vector])
            scan = next((row[0].strip(" ->") for row in cursor.fetchall() if "Scan" in row[0]), "no scan")
        return scan.split("  (")[0]

    def figures(self, built: tuple[float, float], writes: list[float], searches: list[float], probe) -> dict:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_total_relation_size('{self.table}')")
            size = cursor.fetchone()[0]
        return {
            "load_s": round(built[0], 2),
            "index_s": round(built[1], 2),
            "writes_per_s": round(len(writes) / (sum(writes) / 1000), 1),
            "search_ms": {
                "p50": round(statistics.median(searches), 3),
                "p95": round(float(np.percentile(searches, 95)), 3),
            },
            "table_mb": round(size / 1e6, 1),
            "plan": self.plan(probe),
        }

    def drop(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {self.table}")


def _alternated(layouts: dict, action: str, vectors) -> dict[str, list[float]]:
    """Each vector written to (or searched in) every layout in turn, the first layout alternating;
    milliseconds per layout. The searches start after a few unmeasured ones that read the indexes in."""
    timings: dict[str, list[float]] = {name: [] for name in layouts}
    order = list(layouts.values())
    with connection.cursor() as cursor:
        if action == "search":
            for layout in order:
                for vector in vectors[:5]:
                    layout.search(cursor, vector)
        for i, vector in enumerate(tqdm(vectors, desc=f"{action}s, alternated", unit="row", mininterval=2)):
            for layout in order if i % 2 == 0 else order[::-1]:
                started = time.perf_counter()
                getattr(layout, action)(cursor, vector)
                timings[layout.name].append((time.perf_counter() - started) * 1000)
    return timings


def _copy(table: str, rows: list[tuple], label: str, columns: str = "model, embedding") -> None:
    with (
        connection.connection.cursor() as raw,
        raw.copy(f"COPY {table} ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy,
    ):
        copy.set_types(["text", "vector"] if "," in columns else ["vector"])
        for row in tqdm(rows, desc=label, unit="row", mininterval=2):
            copy.write_row(row)


def _unit(rng, rows: int, dimensions: int) -> np.ndarray:
    vectors = rng.standard_normal((rows, dimensions)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
