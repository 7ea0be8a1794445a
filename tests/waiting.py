"""Waiting on what a test checks: a condition polled against a deadline, never a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(
    condition: Callable[[], T],
    what: str,
    seconds: float = 60.0,
    *,
    every: float = 0.01,
    pause: Callable[[float], object] = time.sleep,
) -> T:
    """Poll ``condition`` until it returns something true, and return that; fail, saying ``what``
    did not happen, once ``seconds`` have passed. ``pause`` waits between polls (a browser test
    passes its page's own wait, so that the page's events keep arriving meanwhile)."""
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {seconds} s"
        pause(every)
    return value
