"""The worker's supervisor: runs django-q2's clusters, replaces one that cannot work, stops them in seconds.

`make run` (scripts/run.sh) and `make worker` run ``manage.py knowledge_worker``,
which runs one ``manage.py qcluster`` per task queue (knowledge.task_queues: documents,
and long work) as its children, each in a session of its own (so a signal to the
terminal's process group reaches a cluster only through here: django-q2's cluster
hung for good when a second SIGTERM came while it was stopping).

- It replaces the cluster when the cluster exits, or when its probe shows that it
  takes no task although a worker is idle (knowledge.worker_probes: a worker killed
  while it waited for a task holds the cluster's queue lock for good, and django-q2
  restarts that worker into the same dead lock).
- On SIGTERM or SIGINT it asks the cluster to stop and kills its whole process group
  after ``KNOWLEDGE_WORKER_STOP_SECONDS``: django-q2's own stop waits for running
  tasks to end, and in a stuck cluster for ever.
- After it killed a cluster it queues again, at once, the document jobs the killed
  processes were running and (the document cluster) the ones it had fetched from the
  broker but not started, and fails the source syncs they were running (so the next
  sync may start). A killed long-work cluster's other tasks (a gate, an evaluation)
  come back only as the broker delivers them again: the ORM broker after its retry
  period; Redis does not.
- Should it die without stopping the cluster (``kill -9``), the cluster's workers
  notice within a heartbeat round and kill their cluster.
"""

from __future__ import annotations

import datetime
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import psutil
from django.conf import settings
from django.db import connection
from django.utils import timezone

from knowledge.processing_jobs import (
    housekeeping_interval,
    jobs_recover_stale,
    jobs_requeue_lost,
    queue_depth,
    worker_name,
)
from knowledge.services.sync_liveness import syncs_fail_stale
from knowledge.task_queues import document_queue, long_work_queue, queue_broker
from knowledge.worker_housekeeping import SUPERVISOR_PID
from knowledge.worker_probes import cluster_forget, cluster_name, clusters_stuck, probe_limit

logger = logging.getLogger(__name__)

CHECK_EVERY = 1.0  # seconds between looks at the cluster (a process poll and two small queries)
# A cluster that fails this soon after its start (the database down at start, a broken setting) would
# otherwise be restarted every second: each quick failure doubles the pause before the next start.
QUICK_FAILURE_SECONDS = 30.0
LONGEST_RESTART_PAUSE = 60.0


@dataclass
class Cluster:
    queue: str
    process: subprocess.Popen
    started_at: float = field(default_factory=time.monotonic)
    # Jobs queued before this time may sit in a killed cluster's memory: queue them again.
    lost_before: datetime.datetime | None = field(default=None)
    # After a failed check (the database was down, so no task could be taken), a probe's wait
    # says nothing until the workers have sent a fresh one (their next round) and it has had
    # its time: no verdict before this time.
    trusted_from: float = 0.0


def supervise() -> None:
    """Run a cluster per task queue until SIGTERM or SIGINT, then stop them within seconds."""
    stopping: list[int] = []  # a flag the signal handler can set without taking any lock
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, _frame: stopping.append(number))
    clusters = [cluster_start(queue) for queue in (document_queue(), long_work_queue())]
    quick_failures = {cluster.queue: 0 for cluster in clusters}
    while not stopping:
        time.sleep(CHECK_EVERY)
        for index, cluster in enumerate(clusters):
            if stopping:
                break
            fault = cluster_fault(cluster)
            if not fault:
                _requeue_fetched(cluster)
                continue
            lived = time.monotonic() - cluster.started_at
            failures = quick_failures[cluster.queue] + 1 if lived < QUICK_FAILURE_SECONDS else 0
            quick_failures[cluster.queue] = failures
            clusters[index] = _replace(cluster, fault, restart_pause(failures), stopping)
    for cluster in clusters:
        logger.info("Stopping the worker cluster %s", cluster.process.pid)
        cluster_stop(cluster)


def _replace(cluster: Cluster, fault: str, pause: float, stopping: list[int]) -> Cluster:
    """Kill a faulty cluster and start its queue's cluster again after ``pause`` (the old one if stopping).

    The other queue's cluster waits meanwhile: a pause is long only after repeated quick failures,
    when the cause (the database down, a broken setting) stops both anyway.
    """
    logger.critical("Worker cluster %s %s; replacing it in %.0f s", cluster.process.pid, fault, pause)
    lost_before = cluster_kill(cluster)
    _sleep_unless_stopping(pause, stopping)
    if stopping:
        return cluster  # already killed: stopping it again is harmless
    replacement = cluster_start(cluster.queue)
    if cluster.queue == document_queue():  # only its workers fetch document jobs
        replacement.lost_before = lost_before
    return replacement


def restart_pause(quick_failures: int) -> float:
    """Seconds to wait before starting a cluster again: none at first, then 1, 2, 4 ... up to a minute."""
    if quick_failures <= 1:
        return 0.0
    return min(2.0 ** (quick_failures - 2), LONGEST_RESTART_PAUSE)


def _sleep_unless_stopping(seconds: float, stopping: list[int]) -> None:
    deadline = time.monotonic() + seconds
    while not stopping and time.monotonic() < deadline:
        time.sleep(max(min(CHECK_EVERY, deadline - time.monotonic()), 0.0))


def cluster_start(queue: str) -> Cluster:
    """A cluster taking the tasks of ``queue`` (django-q2 reads the queue's name from Q_CLUSTER_NAME)."""
    manage = os.path.join(settings.BASE_DIR, "manage.py")
    # The cluster's workers kill it if this process dies without stopping it (worker_housekeeping).
    env = {**os.environ, SUPERVISOR_PID: str(os.getpid()), "Q_CLUSTER_NAME": queue}
    process = subprocess.Popen([sys.executable, manage, "qcluster"], env=env, start_new_session=True)
    logger.info("Started the worker cluster %s for the queue %s", process.pid, queue)
    return Cluster(queue=queue, process=process)


def cluster_fault(cluster: Cluster) -> str:
    """Why the cluster must be replaced, or "" while it works (or may be busy)."""
    code = cluster.process.poll()
    if code is not None:
        return f"exited with {code}"
    try:
        stuck = _stuck(cluster)
    except Exception as exc:
        # The database may be down: that is no reason to kill a cluster; look again next round
        # (a warning, not a traceback: this repeats every second while the outage lasts).
        logger.warning("Could not check the worker cluster (%s: %s); checking again", type(exc).__name__, exc)
        cluster.trusted_from = time.monotonic() + housekeeping_interval() + probe_limit()
        return ""
    finally:
        connection.close()
    return stuck if time.monotonic() >= cluster.trusted_from else ""


def _stuck(cluster: Cluster) -> str:
    from knowledge.health import worker_silence_limit

    now = timezone.now()
    alive_since = now - datetime.timedelta(seconds=worker_silence_limit())
    stuck = clusters_stuck(now=now, alive_since=alive_since)
    for sentinel in _children(cluster.process.pid):
        waited = stuck.get(cluster_name(sentinel.pid))
        if waited is not None:
            return f"took no task for {waited:.0f} s although a worker was idle"
    return ""


def cluster_stop(cluster: Cluster) -> None:
    """SIGTERM (django-q2's graceful stop), then the whole group killed after the stop limit."""
    seconds = settings.KNOWLEDGE_WORKER_STOP_SECONDS
    try:
        cluster.process.send_signal(signal.SIGTERM)
        cluster.process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        logger.warning("The worker cluster did not stop within %s s; killing it", seconds)
    cluster_kill(cluster)


def cluster_kill(cluster: Cluster) -> datetime.datetime:
    """Kill every process of the cluster, then queue again what it held; returns the kill time."""
    processes = _children(cluster.process.pid, recursive=True)
    sentinels = _children(cluster.process.pid)
    try:
        os.killpg(cluster.process.pid, signal.SIGKILL)  # its session's group: pid == pgid
    except ProcessLookupError:
        pass  # every process of the group has already exited
    cluster.process.wait()
    killed_at = timezone.now()
    names = [worker_name(p.pid) for p in processes]
    try:
        for sentinel in sentinels:
            cluster_forget(cluster=cluster_name(sentinel.pid), workers=names)
        jobs_recover_stale(workers=names)
        syncs_fail_stale(workers=names)  # at once, without waiting for their beats to fall silent
        if cluster.queue == document_queue():  # only its workers fetch document jobs
            jobs_requeue_lost(queued_before=killed_at)
    except Exception:
        logger.exception("Could not queue again the jobs of the killed worker cluster; the sweeps will")
    finally:
        connection.close()
    return killed_at


def _requeue_fetched(cluster: Cluster) -> None:
    """Once the broker's queue is empty, queue again the jobs a killed cluster had fetched."""
    if cluster.lost_before is None:
        return
    try:
        if queue_depth(queue_broker(document_queue())) == 0:
            jobs_requeue_lost(queued_before=cluster.lost_before)
            cluster.lost_before = None
    except Exception:
        logger.exception("Could not queue again the jobs of the killed worker cluster; trying again")
    finally:
        connection.close()


def _children(pid: int, *, recursive: bool = False) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=recursive)
    except psutil.NoSuchProcess:
        return []
