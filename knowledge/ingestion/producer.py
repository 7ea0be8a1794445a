"""A thread that runs an iterator ahead of its consumer, over a bounded queue (errors included)."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator

# How often a consumer waiting for items is given its ``idle`` call.
_IDLE_S = 0.25


class Producer:
    """Runs a draft iterator in a thread and hands its items over a bounded queue, errors included.

    ``on_stop`` is called when the consumer leaves before the end (it must unblock the iterator).
    """

    _DONE = object()

    def __init__(self, items: Iterator, *, on_stop: Callable[[], None] = lambda: None, ahead: int):
        self._items = items
        self._on_stop = on_stop
        self._queue: queue.Queue = queue.Queue(maxsize=ahead)  # how far the producer may run ahead
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ingest-producer", daemon=True)
        self.count = 0  # items produced so far (read by the consumer for progress)
        self._finished = False

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()  # the consumer failed or finished: let the producer end
        if not self._finished:
            self._on_stop()
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):  # unblock a producer waiting on a full queue
                self._queue.get(timeout=0.1)
        self._thread.join()

    def take(self, *, minimum: int, maximum: int, idle: Callable[[], None] = lambda: None) -> list:
        """Wait for ``minimum`` items (fewer at the end), then take what else is ready up to ``maximum``.

        ``idle`` is called about every _IDLE_S seconds of waiting (a scanned page takes seconds)."""
        items: list = []
        while len(items) < maximum and not self._finished:
            waiting = len(items) < minimum
            try:
                item = self._queue.get(block=waiting, timeout=_IDLE_S if waiting else None)
            except queue.Empty:
                if waiting:
                    idle()
                    continue
                break
            if item is self._DONE:
                self._finished = True
            elif isinstance(item, BaseException):
                self._finished = True
                raise item
            else:
                items.append(item)
        return items

    def _run(self) -> None:
        try:
            for item in self._items:
                if self._stop.is_set():
                    return
                self.count += 1
                self._put(item)
            self._put(self._DONE)
        except BaseException as exc:  # handed to the consumer, which raises it in its own thread
            self._put(exc)

    def _put(self, item) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(queue.Full):
                self._queue.put(item, timeout=0.1)
                return
