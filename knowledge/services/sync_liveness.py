"""Whether a running source sync is still alive, and the sweep that fails the ones whose process died.

A sync (knowledge.services.sources) records its process (host:pid) and beats its row from a thread of
its own while it runs (``SyncBeat``), whatever it is busy with: a slow page, a clone, documents
processed inline. A process killed, out of memory or restarted stops beating; after three missed
beats the sweep every worker runs (knowledge.worker_housekeeping), the pages and the next sync all
fail it with the reason, and the next sync may start. The sync's own writes go only to its row while
it is still running (``sync_held``): one taken for dead that was only late stops (``SyncLost``) and
never overwrites the verdict, so two syncs of one source never write at once.
"""

from __future__ import annotations

import datetime
import logging
import threading

from django.db import DatabaseError, connection
from django.db.models import Q
from django.utils import timezone

from knowledge.models import SourceSync
from knowledge.processing_jobs import housekeeping_interval

logger = logging.getLogger(__name__)

# What a sync whose process died says (killed, out of memory, restarted), found by the sweep.
WORKER_STOPPED = "the worker stopped during the sync; sync again"


def sync_silence() -> datetime.timedelta:
    """A running sync beats every housekeeping interval: three beats missed, its process is gone."""
    return datetime.timedelta(seconds=3 * housekeeping_interval())


def syncs_fail_stale(*, sources=None, workers: list[str] | None = None) -> int:
    """Fail, with the reason, the running syncs (of ``sources``; all by default) whose process is gone:
    silent for three beats, or run by one of ``workers`` (host:pid names of processes known dead).
    Returns how many. Rows from before syncs beat are judged by their start."""
    now = timezone.now()
    cutoff = now - sync_silence()
    dead = Q(beat_at__lt=cutoff) | Q(beat_at__isnull=True, started_at__lt=cutoff)
    if workers:
        dead |= Q(worker__in=workers)
    running = SourceSync.objects.filter(dead, status=SourceSync.Status.RUNNING)
    if sources is not None:
        running = running.filter(source__in=sources)
    failed = running.update(status=SourceSync.Status.FAILED, error=WORKER_STOPPED, stage="", finished_at=now)
    if failed:
        logger.warning("%s source sync(s) failed: their worker stopped", failed)
    return failed


def sync_held(run: SourceSync):
    """The sync's row while it is still this run's (not failed by the sweep meanwhile)."""
    return SourceSync.objects.filter(pk=run.pk, status=SourceSync.Status.RUNNING)


class SyncLost(Exception):
    """The sweep took this sync for dead (its beats stopped reaching the database, or its worker was
    named dead) and may have let another start: this one stops at its next progress write (at most
    half a second of items later) and writes no result."""


class SyncBeat:
    """Beats a running sync's row from a thread of its own, every housekeeping interval, until the
    ``with`` block ends; the thread closes its own database connection."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"source-sync-{run_id}", daemon=True)

    def __enter__(self) -> SyncBeat:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        self.thread.join()

    def _loop(self) -> None:
        try:
            while not self.stopped.wait(housekeeping_interval()):
                try:
                    running = SourceSync.objects.filter(pk=self.run_id, status=SourceSync.Status.RUNNING)
                    running.update(beat_at=timezone.now())
                except DatabaseError:  # an outage: the sweep may take the sync for dead, and it stops
                    logger.warning("Could not record that sync %s is alive; trying again", self.run_id)
        finally:
            connection.close()
