"""Dense search with pgvector, choosing the plan by how much of the table the scope keeps.

A small scope (one collection in a big table) is searched exactly: the b-tree
on (collection, chunk profile) finds its rows and every distance is computed,
which is both exact and cheaper than walking the graph. A large scope uses the
HNSW index with pgvector 0.8's iterative scan, so the filter cannot starve the
result (without it, a filter keeping 1% of rows returns nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction

from knowledge.retrieval.scope import Scope

EXACT_SCAN_MAX_ROWS = 20_000
HNSW_EF_SEARCH = 100


@dataclass(frozen=True)
class DenseHit:
    chunk_id: int
    distance: float


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def scope_row_count(scope: Scope, *, extra_sql: str = "", extra_params: tuple = ()) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM knowledge_chunk c WHERE {scope.sql()} {extra_sql}",
            [*scope.params(), *extra_params],
        )
        return cursor.fetchone()[0]


def dense_search(
    *,
    vector: np.ndarray,
    scope: Scope,
    limit: int,
    extra_sql: str = "",
    extra_params: tuple = (),
    exact: bool | None = None,
) -> list[DenseHit]:
    """Nearest chunks by cosine distance, best first. ``exact=None`` chooses by scope size."""
    if exact is None:
        exact = scope_row_count(scope, extra_sql=extra_sql, extra_params=extra_params) <= EXACT_SCAN_MAX_ROWS
    literal = vector_literal(vector)
    # "+ 0" keeps the planner off the HNSW index for the exact plan.
    order = "(c.embedding <=> %s::vector) + 0" if exact else "c.embedding <=> %s::vector"
    sql = (
        f"SELECT c.id, c.embedding <=> %s::vector AS distance FROM knowledge_chunk c "
        f"WHERE {scope.sql()} {extra_sql} ORDER BY {order} LIMIT %s"
    )
    params = [literal, *scope.params(), *extra_params, literal, limit]
    with transaction.atomic(), connection.cursor() as cursor:
        if not exact:
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute(f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH, limit)}")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    # relaxed_order may return neighbours slightly out of order.
    return sorted((DenseHit(chunk_id, distance) for chunk_id, distance in rows), key=lambda h: h.distance)


def distances_for(*, vector: np.ndarray, chunk_ids: list[int]) -> dict[int, float]:
    """Cosine distances of given chunks (for candidates found only by the lexical search)."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding <=> %s::vector FROM knowledge_chunk WHERE id = ANY(%s)",
            [vector_literal(vector), chunk_ids],
        )
        return dict(cursor.fetchall())
