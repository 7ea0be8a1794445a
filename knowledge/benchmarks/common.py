"""Helpers shared by the benchmarks: percentiles, peak memory, throw-away collections."""

from __future__ import annotations

import contextlib
import resource
import statistics
import time
from collections.abc import Iterator

from knowledge.evaluation.metrics import percentile  # noqa: F401  (re-exported for benchmarks)
from knowledge.models import Collection, Document
from knowledge.services.collections import collection_create


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def throwaway_collection(prefix: str, **fields) -> Iterator[Collection]:
    collection = collection_create(name=f"{prefix}-{time.time_ns()}", **fields)
    try:
        yield collection
    finally:
        collection.delete()


# Benchmarks load chunks with COPY, straight into the product's chunk table, with these columns.
CHUNK_COPY_SQL = (
    "COPY knowledge_chunk (document_id, collection_id, chunk_profile_id, embedding_model, index, content,"
    " token_count, source_ref, heading_path, sheet, element_id, ref_ids, referenced_by, metadata, embedding,"
    " created_at) FROM STDIN"
)


def chunk_copy_row(
    *, document_id: int, collection: Collection, model: str, index: int, text: str, vector: str
):
    """One row for CHUNK_COPY_SQL: a plain-text section chunk with ``vector`` (a pgvector literal)."""
    return (
        document_id,
        collection.pk,
        collection.chunk_profile_id,
        model,
        index,
        text,
        len(text.split()),
        "section=bench",
        "{}",
        "",
        "",
        "{}",
        "{}",
        "{}",
        vector,
        "now",
    )


def bench_documents_create(collection: Collection, keys: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """One empty document row per key (the chunks' parents), created in one statement: key -> id."""
    documents = Document.objects.bulk_create(
        [
            Document(
                collection=collection, filename=f"bench-{r}-{f}.txt", content_hash=f"bench-{r}-{f}", size=0
            )
            for r, f in keys
        ]
    )
    return {key: document.pk for key, document in zip(keys, documents, strict=True)}
