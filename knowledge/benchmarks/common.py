"""Helpers shared by the benchmarks: percentiles, peak memory, throw-away collections."""

from __future__ import annotations

import contextlib
import resource
import statistics
import time
from collections.abc import Iterator

from knowledge.collections import collection_create
from knowledge.evaluation.metrics import percentile  # noqa: F401  (re-exported for benchmarks)
from knowledge.models import Collection


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
