"""/healthz for load balancers: the database, the task queue and the workers, each checked cheaply.

200 with a JSON body when every check passes, 503 naming the failing checks
otherwise. No authentication, no session, no user data: a few small queries
(SELECT 1, the queues' lengths, the oldest queued document job, the newest worker heartbeat).
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from knowledge.models import WorkerHeartbeat
from knowledge.processing_jobs import housekeeping_interval, queue_depth, queue_wait
from knowledge.task_queues import document_queue, long_work_queue, queue_broker
from knowledge.worker_probes import clusters_stuck

logger = logging.getLogger(__name__)

_brokers: dict[str, object] = {}


class HealthProblem(Exception):
    """A failed check whose message is safe to show anyone (the others show only their type)."""


def _get_broker(queue: str):
    """One broker per queue and process: django-q2 opens a new connection for every broker it makes."""
    if queue not in _brokers:
        _brokers[queue] = queue_broker(queue)
    return _brokers[queue]


def check_database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {}


def check_queue() -> dict:
    """Both queues answer, and the document queue moves: its oldest job waits no longer than
    KNOWLEDGE_QUEUE_STALL_SECONDS unless a job started or a running job beat within that time (a long
    backlog being worked through, or one large document, is busy, not stuck)."""
    depths = {}
    for name, queue in (("depth", document_queue()), ("long_work_depth", long_work_queue())):
        broker = _get_broker(queue)
        broker.ping()  # Redis: raises when unreachable (the ORM broker is the database)
        depths[name] = queue_depth(broker)
    waited, since_moved = queue_wait()
    limit = settings.KNOWLEDGE_QUEUE_STALL_SECONDS
    if waited is not None and waited > limit and (since_moved is None or since_moved > limit):
        raise HealthProblem(f"the document queue is not moving: its oldest job has waited {waited:.0f} s")
    oldest = None if waited is None else round(waited, 1)
    return {"broker": "redis" if settings.REDIS_URL else "orm", **depths, "oldest_queued_s": oldest}


def worker_silence_limit() -> float:
    """A worker is taken for dead after three missed heartbeats."""
    return 3 * housekeeping_interval()


def check_worker() -> dict:
    """A worker beat recently and no cluster leaves its probe waiting while a worker is idle.

    Tasks run in-process when KNOWLEDGE_SYNC_TASKS is on. A beating worker alone is
    no proof that a queued task is taken (knowledge.worker_probes explains why).
    """
    if settings.Q_CLUSTER.get("sync"):
        return {"mode": "sync"}
    now = timezone.now()
    since = now - datetime.timedelta(seconds=worker_silence_limit())
    beating = WorkerHeartbeat.objects.filter(beat_at__gte=since)
    alive = beating.count()
    if not alive:
        last = WorkerHeartbeat.objects.order_by("-beat_at").values_list("beat_at", flat=True).first()
        silent = f"{(now - last).total_seconds():.0f} s" if last else "ever"
        raise HealthProblem(f"no worker heartbeat for {silent}")
    stuck = clusters_stuck(now=now, alive_since=since)
    if stuck:
        waited = max(stuck.values())
        raise HealthProblem(f"{len(stuck)} worker cluster(s) took no task for {waited:.0f} s while idle")
    return {"alive": alive, "busy": beating.filter(idle_since__isnull=True).count()}


CHECKS: dict[str, Callable[[], dict]] = {
    "database": check_database,
    "queue": check_queue,
    "worker": check_worker,
}


def _run(name: str, check: Callable[[], dict]) -> dict:
    started = time.perf_counter()
    try:
        result = {"ok": True, **check()}
    except Exception as exc:
        logger.warning("Health check %s failed: %s", name, exc)
        # Other errors may name internal hosts: the log has them, the public body only their kind.
        error = str(exc) if isinstance(exc, HealthProblem) else type(exc).__name__
        result = {"ok": False, "error": error}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def _needs_database(name: str) -> bool:
    """The worker checks read heartbeats from the database, and so does the ORM broker's queue."""
    return name == "worker" or (name == "queue" and not settings.REDIS_URL)


@never_cache
@require_GET
def healthz(request):
    checks: dict[str, dict] = {}
    for name, check in CHECKS.items():
        if name != "database" and _needs_database(name) and not checks["database"]["ok"]:
            # Trying again would wait another DB_CONNECT_TIMEOUT: the probe must answer within seconds.
            checks[name] = {"ok": False, "error": "the database is unreachable", "ms": 0.0}
            continue
        checks[name] = _run(name, check)
    failing = [name for name, result in checks.items() if not result["ok"]]
    body = {"status": "failing" if failing else "ok", "failing": failing, "checks": checks}
    return JsonResponse(body, status=503 if failing else 200)
