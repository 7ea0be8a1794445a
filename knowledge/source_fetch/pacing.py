"""Spacing the requests to each host (knowledge.source_fetch.web): a site is asked politely."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class HostPacer:
    """Spaces the requests to each host so that at most ``requests_per_second`` start per second.

    Thread-safe: each caller reserves the next free slot under the lock and sleeps outside it, so
    requests to other hosts never wait. Share one pacer between the fetchers that should share a budget."""

    # Past this many hosts, those whose last slot is over are forgotten: a long crawl must not keep them all.
    _FORGET_AFTER_HOSTS = 1024

    def __init__(
        self,
        requests_per_second: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if requests_per_second <= 0:
            raise ValueError("requests_per_second must be positive")
        self.interval = 1.0 / requests_per_second
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._last_slot: dict[str, float] = {}

    def wait(self, host: str) -> float:
        """Blocks until a request to ``host`` may start; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            last = self._last_slot.get(host.lower())
            slot = now if last is None else max(now, last + self.interval)
            self._last_slot[host.lower()] = slot
            self._forget_idle_hosts(now)
        delay = slot - now
        if delay > 0:
            self._sleep(delay)
        return max(delay, 0.0)

    def _forget_idle_hosts(self, now: float) -> None:
        if len(self._last_slot) > self._FORGET_AFTER_HOSTS:
            self._last_slot = {h: t for h, t in self._last_slot.items() if t + self.interval > now}
