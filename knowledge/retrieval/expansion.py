"""Reference expansion (docs/design.md#references): follow ref_ids breadth-first from the primary chunks.

Visited set (cycles never loop), max depth, a total chunk cap with a 60/40
primary/reference split, one batched fetch per level, missing references
logged and skipped, and a time limit after which the result is marked partial.
Referenced chunks are fetched inside the same search scope, so expansion can
never reach a collection the user may not read.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import lru_cache

from config.base.prepared import PreparedSelect
from knowledge.models import Chunk
from knowledge.retrieval.scope import Scope

logger = logging.getLogger(__name__)

MAX_DEPTH = 3
MAX_TOTAL_CHUNKS = 15
PRIMARY_SHARE = 0.6
TIME_LIMIT_MS = 5000


@dataclass
class ExpansionResult:
    chunks: list[Chunk] = field(default_factory=list)
    depth_reached: int = 0
    missing_refs: list[str] = field(default_factory=list)
    cycles_skipped: int = 0
    partial: bool = False
    limit_hit: str = ""


def reference_budget(primary_count: int, *, max_total: int = MAX_TOTAL_CHUNKS) -> int:
    """Slots left for references: 40% of the total, less when primaries take more than 60%."""
    reserved_for_references = max_total - round(max_total * PRIMARY_SHARE)
    return max(0, min(reserved_for_references, max_total - primary_count))


def expand_references(
    primary: list[Chunk],
    *,
    scope: Scope,
    max_depth: int = MAX_DEPTH,
    max_total: int = MAX_TOTAL_CHUNKS,
    time_limit_ms: float = TIME_LIMIT_MS,
) -> ExpansionResult:
    result = ExpansionResult()
    budget = reference_budget(len(primary), max_total=max_total)
    visited = {c.element_id for c in primary if c.element_id}
    frontier = _next_ids(primary, visited, result)
    started = time.monotonic()
    for depth in range(1, max_depth + 1):
        if not frontier or len(result.chunks) >= budget:
            break
        if (time.monotonic() - started) * 1000 > time_limit_ms:
            result.partial, result.limit_hit = True, "time"
            break
        level = _fetch_level(frontier, scope)
        _record_missing(frontier, level, result)
        room = budget - len(result.chunks)
        result.chunks.extend(level[:room])
        if len(level) > room:
            result.limit_hit = "chunks"
        result.depth_reached = depth
        visited.update(frontier)
        frontier = _next_ids(level[:room], visited, result)
    if frontier and result.depth_reached == max_depth and not result.limit_hit:
        result.limit_hit = "depth"
    return result


def _next_ids(chunks: list[Chunk], visited: set[str], result: ExpansionResult) -> list[str]:
    """Unvisited ids referenced by ``chunks``, in rank order, without duplicates."""
    ids: list[str] = []
    for chunk in chunks:
        for ref in chunk.ref_ids or []:
            if ref in visited:
                result.cycles_skipped += 1
            elif ref not in ids:
                ids.append(ref)
    return ids


def _fetch_level(ids: list[str], scope: Scope) -> list[Chunk]:
    """First chunk of each referenced element, in the order the ids were found (one query)."""
    rows = _level_select(scope.sql('"m"')).fetch([ids, *scope.params()])
    by_id = {chunk.element_id: chunk for chunk in rows}
    return [by_id[i] for i in ids if i in by_id]


@lru_cache(maxsize=64)
def _level_select(scope_sql: str) -> PreparedSelect:
    """The level's chunks with their documents, its SQL built once per scope text (the text depends on
    the scope's shape, not on its ids). Not the vectors nor the full-text vectors: never read from here on."""
    return PreparedSelect(
        Chunk,
        related="document",
        defer=("embedding", "search_vector"),
        where=f'"m"."element_id" = ANY(%s) AND {scope_sql}',
        distinct_on='"m"."element_id"',
        order_by='"m"."element_id", "m"."index"',
    )


def _record_missing(ids: list[str], level: list[Chunk], result: ExpansionResult) -> None:
    found = {c.element_id for c in level}
    for ref in ids:
        if ref not in found:
            logger.warning("Reference %s not found in the searchable chunks; skipped", ref)
            result.missing_refs.append(ref)
