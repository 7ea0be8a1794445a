"""Which chunks a search may see, as SQL that runs inside the search query.

The rule comes from knowledge.access (the one place that decides); this module
only compiles it into a condition over the chunk table, so access, profile and
chunk-profile filters apply before ORDER BY and LIMIT, never after.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from knowledge.access import readable_collections


@dataclass(frozen=True)
class Scope:
    """The chunks a search may see: each readable collection's chunks under its active chunk profile
    and its active embedding model (a re-index's new chunks stay out until the collection switches).

    ``collections_sql`` yields one (collection id, chunk profile id, embedding model) row per
    collection in scope. ``embedding_model`` narrows to one model's chunks: a dense search compares
    one question vector with the vectors of the model that made it, and the literal condition
    lets PostgreSQL use that model's partial HNSW index (migration 0021).
    """

    collections_sql: str
    collections_params: tuple
    embedding_model: str | None = None
    # Set by multi-step retrieval: only these documents' chunks, on top of access (never widening it).
    document_ids: tuple[int, ...] | None = None
    # Set by ``of_chunk_sets``: collections_params are three columns, sent as arrays.
    collections_pinned: bool = False

    def sql(self, alias: str = "c", *, per_row: bool = False) -> str:
        """A boolean condition over the chunk table aliased ``alias``.

        ``per_row`` keeps the access subquery a filter checked on each row (a hashed
        subplan) instead of letting the planner turn it into a join: a join cannot
        return rows in the order of an index scan, so an HNSW search would become a
        sort of every row in scope (1.4 s instead of 3 ms over 100,000 chunks).
        """
        model = f" AND {alias}.embedding_model = %s" if self.embedding_model else ""
        documents = f" AND {alias}.document_id = ANY(%s)" if self.document_ids is not None else ""
        columns = f"{alias}.collection_id, {alias}.chunk_profile_id, {alias}.embedding_model"
        allowed = f"({columns}) IN ({self.collections_sql})"
        # The planner pulls up only a bare IN; wrapped in IS TRUE it stays a filter (same truth).
        allowed = f"({allowed}) IS TRUE" if per_row else allowed
        return f"{allowed}{model}{documents}"

    def collection_ids_sql(self, alias: str = "c") -> tuple[str, list]:
        """A pinned scope's collections as a plain condition an index can serve, and its parameter.

        ``sql(per_row=True)`` keeps the scope a per-row filter; with this beside it, a search over a
        few collections in a large table can start from their rows (an index on the collection)
        instead of from every chunk of the table its other condition matches. Unpinned: nothing.
        """
        if not self.collections_pinned:
            return "", []
        return f" AND {alias}.collection_id = ANY(%s)", [list(self.collections_params[0])]

    def params(self) -> list:
        model = [self.embedding_model] if self.embedding_model else []
        documents = [list(self.document_ids)] if self.document_ids is not None else []
        collections = self.collections_params
        if self.collections_pinned:  # kept as tuples: a Scope is hashable (a cache key)
            collections = [list(column) for column in collections]
        return [*collections, *model, *documents]

    def restricted_to(self, document_ids) -> Scope:
        return replace(self, document_ids=tuple(int(d) for d in document_ids))

    def of_model(self, embedding_model: str) -> Scope:
        """Only the chunks embedded by ``embedding_model`` (the collections on that model)."""
        return replace(self, embedding_model=embedding_model)

    @classmethod
    def of_chunk_sets(cls, rows: Iterable[tuple[int, int, str]]) -> Scope:
        """A pinned scope of the chunk sets the access check read (``QuestionScope.chunk_sets``): every
        statement of one answer reads the same release of each collection, even when a promotion or
        rollback commits between two of them."""
        return cls(**_pinned_fields(list(rows)))


def _pinned_fields(rows: list[tuple[int, int, str]]) -> dict:
    # Arrays, not a VALUES list: the text stays the same for any number of collections, so
    # statements prepared per scope text (expansion, lexical) are reused.
    columns = tuple(zip(*rows, strict=True)) if rows else ((), (), ())
    return {"collections_sql": _PINNED_CHUNK_SETS, "collections_params": columns, "collections_pinned": True}


_PINNED_CHUNK_SETS = "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::varchar[])"


def search_scope(*, user, collection_ids: Iterable[int] | None = None) -> Scope:
    """Chunks of the serving release (chunk profile and model) of every collection ``user`` may
    read, within ``collection_ids``: the rule as SQL that runs inside each search (the benchmarks'
    and the lower-level searches'; a question's searches read the chunk sets its scope pinned,
    ``Scope.of_chunk_sets``)."""
    allowed = readable_collections(user)
    if collection_ids is not None:
        # An empty list would make Django refuse to compile the subquery (EmptyResultSet); id 0 never exists.
        allowed = allowed.filter(pk__in=list(collection_ids) or [0])
    rows = allowed.order_by().values("pk", "chunk_profile_id", "embedding_model")
    sql, params = rows.query.sql_with_params()
    return Scope(sql, tuple(params))
