"""What every worker process does besides its tasks: a heartbeat and the sweep for lost jobs.

django-q2 sends ``post_spawn`` in each worker process it starts (again after it
replaces a dead or timed-out one); a daemon thread then beats this process's
``WorkerHeartbeat`` row (read by /healthz) and sweeps for jobs whose run died
(see knowledge.processing_jobs) and source syncs whose process died (their beats
stopped: knowledge.services.sync_liveness) every few seconds. Every worker of every cluster
sweeps; the sweeps take rows under SKIP LOCKED, so they never re-queue a job twice.
The heartbeat says whether the process runs a task (django-q2's ``pre_execute`` and
``post_execute_in_worker`` signals), and each round keeps its cluster's probe in
flight (knowledge.worker_probes): together they tell a busy cluster from a stuck one.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading

import psutil
from django.db import connection
from django.utils import timezone

from accounts.audit import audit_events_purge
from accounts.concurrency import concurrency_slots_prune
from accounts.rate_limits import rate_counters_prune
from knowledge.processing_jobs import (
    housekeeping_interval,
    jobs_prune,
    jobs_recover_stale,
    jobs_requeue_lost,
    worker_heartbeat,
    worker_heartbeats_prune,
)
from knowledge.services.releases import releases_expire
from knowledge.services.sync_liveness import syncs_fail_stale
from knowledge.worker_probes import cluster_name, probe_send, probes_prune

logger = logging.getLogger(__name__)

SUPERVISOR_PID = "KNOWLEDGE_SUPERVISOR_PID"


_started_in_pid: int | None = None
_start_lock = threading.Lock()
_idle_since = None  # since when this process has waited for a task; None while it runs one
_round_failed = False  # the last housekeeping round failed (the database or the broker was down)


def start_housekeeping(sender=None, proc_name: str = "", **kwargs) -> None:
    """The ``post_spawn`` receiver: start this worker process's housekeeping thread, once.

    django-q2 also sends the signal when it runs a task in the calling process (sync
    mode, ``sync=True``, the tests): that is no worker process of a cluster (a web
    process must not pass for a live worker), so nothing starts there.
    """
    global _started_in_pid
    if multiprocessing.parent_process() is None:
        return
    with _start_lock:
        if _started_in_pid == os.getpid():
            return
        _started_in_pid = os.getpid()
    mark_idle()  # a new worker process waits for its first task
    thread = threading.Thread(target=_housekeeping_loop, name="knowledge-housekeeping", daemon=True)
    thread.start()


def mark_busy(sender=None, **kwargs) -> None:
    """The ``pre_execute`` receiver: this process now runs a task."""
    global _idle_since
    _idle_since = None


def mark_idle(sender=None, **kwargs) -> None:
    """The ``post_execute_in_worker`` receiver: this process waits for its next task."""
    global _idle_since
    _idle_since = timezone.now()


def _housekeeping_loop() -> None:
    stop = threading.Event()  # never set: the thread dies with its process
    while True:
        if supervisor_gone():
            # Nobody would stop or replace this cluster any more, and it would go on taking tasks.
            logger.critical("The worker supervisor is gone; killing this cluster")
            os.killpg(os.getpgid(0), signal.SIGKILL)
        housekeeping_once()
        stop.wait(housekeeping_interval())


def supervisor_gone() -> bool:
    """Whether the cluster outlived its supervisor (knowledge.worker_supervisor names itself in
    ``SUPERVISOR_PID``): the cluster's main process, its process group's leader, has another parent."""
    supervisor = os.environ.get(SUPERVISOR_PID)
    if not supervisor:
        return False  # a cluster started by hand (manage.py qcluster), not supervised
    try:
        return psutil.Process(os.getpgid(0)).ppid() != int(supervisor)
    except psutil.NoSuchProcess:
        return True


def housekeeping_once() -> None:
    global _round_failed
    try:
        worker_heartbeat(cluster=cluster_name(), idle_since=_idle_since)
        jobs_recover_stale()
        jobs_requeue_lost()
        syncs_fail_stale()  # a sync whose process died is failed, so the next one may start
        worker_heartbeats_prune()
        jobs_prune()
        probes_prune()
        rate_counters_prune()
        concurrency_slots_prune()  # left by web processes that died while they held one
        audit_events_purge()  # past KNOWLEDGE_AUDIT_RETENTION_DAYS; an index range scan, usually empty
        releases_expire()  # retired releases past KNOWLEDGE_RELEASE_RETENTION_DAYS: their chunks go
        # Last: the sweep for lost jobs needs an empty queue, and the probe waits in it for a moment.
        probe_send(cluster=cluster_name(), fresh=_round_failed)
        _round_failed = False
    except Exception:
        # A database or broker outage must not end the thread: log it and try again next round.
        logger.exception("Worker housekeeping failed; retrying")
        _round_failed = True
    finally:
        connection.close()  # this thread's own connection; a worker may sit idle for hours
