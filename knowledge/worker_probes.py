"""Whether each worker cluster takes a queued task now: a round trip through the broker.

A beating worker process is not proof: django-q2's workers read their tasks from
one ``multiprocessing.Queue`` whose read lock a worker holds while it waits; a
worker killed in that wait (``kill -9``, the OOM killer) takes the lock with it,
and the worker django-q2 starts in its place, like every other worker of that
cluster, waits for it for good while its heartbeat thread keeps beating.

So every cluster keeps one probe task in flight (sent by its workers' housekeeping,
answered by whichever worker takes it). A probe unanswered for longer than
``KNOWLEDGE_WORKER_PROBE_SECONDS`` while a worker of that cluster says it is idle
means the cluster cannot take tasks: /healthz fails and the supervisor
(knowledge.worker_supervisor) replaces the cluster. A probe waiting behind tasks
that every worker is busy with is not a fault.
"""

from __future__ import annotations

import datetime
import logging
import os

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from knowledge.models import WorkerHeartbeat, WorkerProbe
from knowledge.processing_jobs import worker_name
from knowledge.task_queues import task_queue

logger = logging.getLogger(__name__)

PROBE_TASK = "knowledge.tasks.worker_probe"


def cluster_name(sentinel_pid: int | None = None) -> str:
    """host:pid of the cluster's sentinel, the parent of its worker processes."""
    return worker_name(sentinel_pid or os.getppid())


class QuietProbes(logging.Filter):
    """Drops django-q2's INFO lines about probes (three per cluster every few seconds); failures still show.

    Its "Enqueued" line names no task: those of the housekeeping thread go too (the
    jobs it queues again have a warning of their own, knowledge.processing_jobs).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        message = record.getMessage()
        if record.threadName == "knowledge-housekeeping" and message.startswith("Enqueued"):
            return False
        return PROBE_TASK not in message


def probe_send(*, cluster: str, now: datetime.datetime | None = None, fresh: bool = False) -> bool:
    """Queue a probe for ``cluster`` unless one is in flight; True when one was queued.

    ``fresh``: replace the one in flight, whose wait no longer says anything (it waited
    through a database outage, when no task could be taken); a late answer to it is ignored.
    """
    now = now or timezone.now()
    with transaction.atomic():
        probe, created = WorkerProbe.objects.select_for_update().get_or_create(
            cluster=cluster, defaults={"sent_at": now}
        )
        if not created and probe.answered_at is None and not fresh:
            return False
        WorkerProbe.objects.filter(pk=probe.pk).update(sent_at=now, answered_at=None)
        transaction.on_commit(lambda: _queue_probe(cluster, now))
    return True


def _queue_probe(cluster: str, sent_at: datetime.datetime) -> None:
    from django_q.conf import Conf

    # On this cluster's own queue (each cluster takes one), where the probe shows whether it moves.
    # Not saved as a result: one every few seconds would fill the task table.
    options = {"task_name": f"probe-{cluster}", "group": "probe", "save": False}
    task_queue(PROBE_TASK, cluster, sent_at.isoformat(), queue=Conf.CLUSTER_NAME, q_options=options)


def probe_answer(*, cluster: str, sent_at: str) -> bool:
    """Mark the probe answered; a late copy of an older probe answers nothing."""
    sent = datetime.datetime.fromisoformat(sent_at)
    answered = WorkerProbe.objects.filter(cluster=cluster, sent_at=sent, answered_at__isnull=True)
    return bool(answered.update(answered_at=timezone.now()))


def probe_limit() -> float:
    return float(settings.KNOWLEDGE_WORKER_PROBE_SECONDS)


def clusters_stuck(
    *, now: datetime.datetime | None = None, alive_since: datetime.datetime
) -> dict[str, float]:
    """Clusters whose probe has waited past the limit while one of their workers has been idle as long.

    Both for longer than the limit: a probe that waited behind a task is taken the
    moment its worker is free, so a worker idle that long with a probe waiting
    cannot read its queue. ``alive_since``: heartbeats older than this belong to
    dead processes. Returns each stuck cluster with the seconds its probe has waited.
    """
    now = now or timezone.now()
    limit = now - datetime.timedelta(seconds=probe_limit())
    overdue = WorkerProbe.objects.filter(answered_at__isnull=True, sent_at__lt=limit)
    idle = WorkerHeartbeat.objects.filter(beat_at__gte=alive_since, idle_since__lt=limit)
    stuck = overdue.filter(cluster__in=idle.values("cluster"))
    return {probe.cluster: (now - probe.sent_at).total_seconds() for probe in stuck}


def cluster_forget(*, cluster: str, workers: list[str]) -> None:
    """Drop a killed cluster's probe and heartbeats, so it no longer counts as stuck or alive."""
    WorkerProbe.objects.filter(cluster=cluster).delete()
    WorkerHeartbeat.objects.filter(name__in=workers).delete()


def probes_prune(*, now: datetime.datetime | None = None) -> int:
    """Forget the probes of clusters gone for a day (a restarted cluster has a new sentinel pid)."""
    now = now or timezone.now()
    deleted, _ = WorkerProbe.objects.filter(sent_at__lt=now - datetime.timedelta(days=1)).delete()
    return deleted
