"""What one piece of work (a sync of a web source, a preview) may spend on fetching, over all its requests.

Per-request limits (``FetchPolicy``) do not bound a whole crawl: sitemap indexes nest, links multiply,
and a server may answer every request slowly just under its limits. A ``FetchBudget`` counts every
request a ``WebFetcher`` sends with it (robots.txt, sitemaps, pages, each redirect hop) and holds a
deadline for the whole work; the fetcher also cuts a response that would outlast that deadline.
Once either runs out, every further request raises ``BudgetExhausted`` (a ``FetchRefused``, so a
caller that does not know budgets still reports it with its reason), and the caller stops.

Pure: no Django import. Thread-safe: fetchers in several threads may share one budget.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from knowledge.source_fetch.web import FetchRefused


class BudgetExhausted(FetchRefused):
    """The work's requests or time ran out; ``kind`` is "requests" or "time"."""

    def __init__(self, reason: str, kind: str):
        super().__init__(reason)
        self.kind = kind


class FetchBudget:
    """At most ``max_requests`` requests within ``seconds`` from now (None: no such limit).

    ``requests_limit`` and ``time_limit`` name, for the reason a person reads, the settings the
    numbers come from ("KNOWLEDGE_SOURCES_SYNC_SECONDS")."""

    def __init__(
        self,
        *,
        max_requests: int | None = None,
        seconds: float | None = None,
        requests_limit: str = "",
        time_limit: str = "",
        clock: Callable[[], float] = time.monotonic,
    ):
        if (max_requests is not None and max_requests < 0) or (seconds is not None and seconds <= 0):
            raise ValueError("max_requests must not be negative and seconds must be positive")
        self.max_requests, self.seconds = max_requests, seconds
        self.requests_limit, self.time_limit = requests_limit, time_limit
        self.used = 0
        self._clock = clock
        self._deadline = None if seconds is None else clock() + seconds
        self._lock = threading.Lock()

    def spend(self) -> float:
        """Take one request; returns the seconds left for it (inf without a deadline)."""
        with self._lock:
            left = self.seconds_left()
            if left <= 0:
                raise self.out_of_time()
            if self.max_requests is not None and self.used >= self.max_requests:
                raise BudgetExhausted(
                    f"the {self.max_requests} requests allowed were all made{_named(self.requests_limit)}",
                    "requests",
                )
            self.used += 1
            return left

    def seconds_left(self) -> float:
        return float("inf") if self._deadline is None else self._deadline - self._clock()

    def out_of_time(self) -> BudgetExhausted:
        return BudgetExhausted(f"the {self.seconds:g} s allowed ran out{_named(self.time_limit)}", "time")


def _named(limit: str) -> str:
    return f" ({limit})" if limit else ""
