"""Dense search with pgvector, choosing exact scan or HNSW by their estimated cost for the scope.

An exact scan reads every row of the scope (the b-tree on (collection, chunk
profile) finds them) and costs in proportion to their number. An HNSW scan
walks the graph; with a filter, pgvector 0.8's iterative scan keeps walking
until enough rows pass it, so it costs in proportion to 1 / selectivity (the
share of the table the scope keeps). A small scope in a big table (one
collection among many) is therefore cheaper, and exact, by scan; a large share
of the table, or a table that is mostly the scope, is cheaper by the graph.

The scope's size comes from the per-partition counts the lexical statistics
keep (``knowledge_lexical_partition``), the same lookup the lexical search
makes, so the choice costs no query of its own when the caller passes it in.

The connection sets ``hnsw.iterative_scan = relaxed_order`` and
``hnsw.ef_search`` once (config/base/database.py), so a filtered HNSW scan returns
the full ``limit`` with no per-query SET and no transaction around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import connection

from config.base.database import HNSW_EF_SEARCH
from config.base.prepared import planned_once_cursor
from knowledge.clients.embedding_registry import embedding_model_info
from knowledge.retrieval.scope import Scope

# pgvector's default hnsw.max_scan_tuples: an iterative scan stops after visiting this many
# tuples, so a scope keeping fewer than limit / this share of the table could come back short.
HNSW_MAX_SCAN_TUPLES = 20_000

# From measurements on a 2-core machine: an exact scan costs a fixed part plus ~5.7 us per row of
# the scope (EXPLAIN ANALYZE, 9,605 chunks); an HNSW top-50 over 100,000 chunks ~1.2 ms unfiltered
# and ~47 ms with a filter keeping 1% (so ~4.5 us per extra tuple visited; a filtered scan visits
# about ef_search / selectivity). Checked by `knowledge_bench retrieve` at 100,000 chunks, both plans
# side by side: 1% scope exact 28.6 ms vs HNSW 225 ms; 50% scope exact 911 ms vs HNSW 14.2 ms (on a
# saturated machine, so several times idle figures; the model picks the faster plan in both).
EXACT_BASE_US = 300.0
EXACT_ROW_US = 5.0
HNSW_BASE_US = 1500.0
HNSW_TUPLE_US = 4.5
# pgvector's HNSW indexes ``vector`` up to 2,000 dimensions and ``halfvec`` up to 4,000: a larger
# model's graph is on its vectors cast to half precision (knowledge.services.model_endpoints).
HNSW_VECTOR_LIMIT = 2000


@dataclass(frozen=True)
class DenseHit:
    chunk_id: int
    distance: float


@dataclass(frozen=True)
class ScopeSize:
    """Chunks the scope's partitions hold and chunks in the whole table (from the partition counts)."""

    rows: int
    table: int


# Text forms of read-only vectors (the per-process cache of question vectors hands out the same
# read-only array for the same question), by the array's identity.
_LITERALS: dict[int, tuple[np.ndarray, str]] = {}
LITERALS_KEPT = 1024


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form of ``vector``; a read-only array's is formatted once (a retrieval sends
    its question's vector twice, and formatting 384 numbers was ~0.25 ms of Python each time)."""
    frozen = isinstance(vector, np.ndarray) and not vector.flags.writeable
    if frozen:
        known = _LITERALS.get(id(vector))
        if known is not None and known[0] is vector:  # the entry holds the array: its id is not reused
            return known[1]
    numbers = vector.tolist() if isinstance(vector, np.ndarray) else vector  # floats format faster
    literal = "[" + ",".join(f"{x:.7g}" for x in numbers) + "]"
    if frozen:
        if len(_LITERALS) >= LITERALS_KEPT:
            _LITERALS.clear()
        _LITERALS[id(vector)] = (vector, literal)
    return literal


# Partition counts, not count(*): a count reads every row of the scope (7.5 ms for 9,605 chunks).
# The scope is evaluated on a stand-in row per partition, as in lexical._STATISTICS_SQL. A scope
# narrowed to one model is sized against that model's chunks: its HNSW graph holds only those.
_SIZE_SQL = """
    SELECT
        coalesce(sum(p.chunks) FILTER (WHERE ({scope}) IS NOT FALSE), 0),
        coalesce(sum(p.chunks) FILTER (WHERE p.embedding_model = %s), 0)
    FROM knowledge_lexical_partition AS p
    CROSS JOIN LATERAL jsonb_populate_record(NULL::knowledge_chunk, jsonb_build_object(
        'collection_id', p.collection_id, 'chunk_profile_id', p.chunk_profile_id,
        'embedding_model', p.embedding_model)) AS c
    WHERE p.chunks > 0
"""


def one_model(scope: Scope) -> Scope:
    """The scope narrowed to one model's chunks: its own, else the default model's (a vector belongs
    to one model, and only a condition naming the model lets PostgreSQL use that model's graph)."""
    return scope if scope.embedding_model else scope.of_model(settings.KNOWLEDGE_EMBEDDING_MODEL)


def scope_size(scope: Scope) -> ScopeSize:
    """The scope's size from the partition counts (document restrictions are not counted)."""
    scope = one_model(scope)
    with connection.cursor() as cursor:
        cursor.execute(_SIZE_SQL.format(scope=scope.sql()), [*scope.params(), scope.embedding_model])
        rows, table = cursor.fetchone()
    return ScopeSize(rows=int(rows), table=int(table))


_MODELS_SQL = """
    WITH partitions AS MATERIALIZED (
        SELECT p.collection_id, p.chunk_profile_id, p.embedding_model, p.chunks
        FROM knowledge_lexical_partition AS p
        CROSS JOIN LATERAL jsonb_populate_record(NULL::knowledge_chunk, jsonb_build_object(
            'collection_id', p.collection_id, 'chunk_profile_id', p.chunk_profile_id,
            'embedding_model', p.embedding_model)) AS c
        WHERE p.chunks > 0 AND ({scope}) IS NOT FALSE
    )
    SELECT ({counts})
"""


def scope_models(scope: Scope) -> dict[str, ScopeSize]:
    """The embedding models whose chunks the scope holds, each with its size (for a question whose
    statistics lookup was skipped: it has no searchable word)."""
    from knowledge.retrieval.lexical import MODEL_COUNTS_SQL, model_counts

    with connection.cursor() as cursor:
        cursor.execute(_MODELS_SQL.format(scope=scope.sql(), counts=MODEL_COUNTS_SQL), scope.params())
        counts = model_counts(cursor.fetchone()[0])
    return {model: ScopeSize(rows=rows, table=table) for model, (rows, table) in counts.items()}


def fused_by_rank(groups: list[list[DenseHit]], *, limit: int) -> list[DenseHit]:
    """One ranking from the dense rankings of several models, by rank alone.

    Cosines of two models are not on one scale (e5's run higher than MiniLM's for the same
    match), so the groups are interleaved by rank, as reciprocal-rank fusion orders lists
    that share no item: every group's first hit, then every second, and so on; within a rank the
    closer hit first. With one group this is that group's ranking unchanged.
    """
    if len(groups) == 1:
        return groups[0][:limit]
    ranked = [(rank, hit.distance, hit) for group in groups for rank, hit in enumerate(group)]
    return [hit for _, _, hit in sorted(ranked, key=lambda item: (item[0], item[1]))][:limit]


def exact_cost_us(size: ScopeSize) -> float:
    return EXACT_BASE_US + EXACT_ROW_US * size.rows


def hnsw_cost_us(size: ScopeSize, *, limit: int) -> float:
    selectivity = size.rows / size.table if size.table else 1.0
    if selectivity <= 0:
        return float("inf")
    visited = max(HNSW_EF_SEARCH, limit) / selectivity
    return HNSW_BASE_US + HNSW_TUPLE_US * (visited - max(HNSW_EF_SEARCH, limit))


def exact_is_cheaper(size: ScopeSize, *, limit: int, scope: Scope) -> bool:
    """Whether to scan the scope exactly rather than walk the HNSW graph.

    A scope narrowed to documents is always scanned: its rows are few and found
    by the document index, while the partition counts cannot see how few.
    A scope too thin for the iterative scan's tuple budget would come back short.
    """
    if scope.document_ids is not None:
        return True
    if size.table and limit * size.table > HNSW_MAX_SCAN_TUPLES * max(size.rows, 1):
        return True
    return exact_cost_us(size) <= hnsw_cost_us(size, limit=limit)


def indexed_type(model: str) -> str:
    """The type ``model``'s HNSW index casts the embedding column to (migration 0039)."""
    dimensions = embedding_model_info(model).dimensions
    return f"{'halfvec' if dimensions > HNSW_VECTOR_LIMIT else 'vector'}({dimensions})"


def dense_search(
    *,
    vector: np.ndarray,
    scope: Scope,
    limit: int,
    extra_sql: str = "",
    extra_params: tuple = (),
    exact: bool | None = None,
    size: ScopeSize | None = None,
) -> list[DenseHit]:
    """Nearest chunks by cosine distance, best first.

    ``exact=None`` chooses the plan by cost from ``size`` (looked up when not given). A scope
    not narrowed to a model searches the default model's chunks.
    """
    scope = one_model(scope)
    if exact is None:
        exact = exact_is_cheaper(size or scope_size(scope), limit=limit, scope=scope)
    literal = vector_literal(vector)
    if exact:
        # The scope's rows through their b-tree (the scope's collections joined), each distance
        # computed once: "OFFSET 0" keeps the subquery whole, so the planner neither walks the
        # HNSW index for the ORDER BY nor computes (and detoasts the vector for) the distance a
        # second time to sort by it (1,000 rows: 12.1 -> 9.2 ms p50).
        sql = (
            f"SELECT id, distance FROM (SELECT c.id, c.embedding <=> %s::vector AS distance"
            f" FROM knowledge_chunk c WHERE {scope.sql()} {extra_sql} OFFSET 0) AS scoped"
            f" ORDER BY distance LIMIT %s"
        )
        params = [literal, *scope.params(), *extra_params, limit]
    else:
        # The graph walk yields rows in distance order; each is checked against the scope's
        # collections as a per-row filter. The model's index is on the column cast to its dimension,
        # so the order is by that same expression.
        typed = indexed_type(scope.embedding_model)
        distance = f"(c.embedding::{typed}) <=> %s::{typed}"
        sql = (
            f"SELECT c.id, {distance} AS distance FROM knowledge_chunk c "
            f"WHERE {scope.sql(per_row=True)} {extra_sql} ORDER BY {distance} LIMIT %s"
        )
        params = [literal, *scope.params(), *extra_params, literal, limit]
    with planned_once_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # relaxed_order may return neighbours slightly out of order.
    return sorted((DenseHit(chunk_id, distance) for chunk_id, distance in rows), key=lambda h: h.distance)
