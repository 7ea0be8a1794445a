"""Processing jobs: one row per request to process a document, claimed atomically by one run.

Several ``qcluster`` processes (on one machine or many) share one queue. The
queue carries the job's id; a run owns the job only after the compare-and-set
``queued -> running`` on its row succeeded, and writes its chunks only while it
still owns it (checked under the row lock of the final transaction). So:

- a task delivered twice (a re-queued task whose first copy was only late, the
  ORM broker's lease running out) finds the job claimed or done and does nothing;
- a run killed with its worker stops beating; the sweep puts its job back in the
  queue (up to ``MAX_ATTEMPTS`` runs), and a late run that lost its claim writes nothing;
- a task is a ticket for one run, not for its own job: it claims the queued job
  that is fairest to run now (the oldest of the uploader with the fewest running
  jobs), so one user's pile of heavy documents never holds back another user's;
- a task lost before any run claimed it (Redis pops without acknowledgement, and
  a cluster pre-fetches tasks into its own memory) leaves its job ``queued``;
  once the broker's queue is empty and the job has waited a whole stale period,
  the sweep queues it again.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import BooleanField, Count, ExpressionWrapper, F, Max, Q, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from psycopg.errors import UniqueViolation

from knowledge.models import Document, ProcessingJob, WorkerHeartbeat
from knowledge.task_queues import document_queue, queue_broker, task_queue

logger = logging.getLogger(__name__)

PROCESS_DOCUMENT = "knowledge.tasks.process_document"  # queued by name: services never import the tasks
PROCESSING_INTERRUPTED = "processing was interrupted (the worker stopped); retry to process it again"
# Runs a job may have before a document that keeps killing its worker is marked failed.
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Claim:
    """A run's ownership of a job: valid while the row is still ``running`` at this attempt."""

    job_id: int
    attempt: int
    document_id: int | None = None
    chunk_profile_id: int | None = None


def worker_name(pid: int | None = None) -> str:
    """host:pid, this process's unless ``pid`` names another of this host."""
    return f"{socket.gethostname()}:{pid or os.getpid()}"


# Tries at a new job before giving up: each failed insert means another request's job committed first.
_ENQUEUE_TRIES = 5


def job_enqueue(*, document_id: int, chunk_profile_id: int | None = None, sync: bool | None = None) -> bool:
    """A job row now (in the caller's transaction) and its task once that transaction commits; False
    when the document already waits for a run of the same chunk profile, which this request joins.

    A queued run has read nothing yet: it reads the document and its collection (the profile, a
    re-index's target) when it starts, so one run serves every request made before then, and asking
    again while it waits queues nothing (a re-index asked for five times queues each document once).
    A running job is never joined: it may have read what the caller is changing.
    """
    with transaction.atomic():  # the twin's lock lasts until the caller's own transaction ends
        for _ in range(_ENQUEUE_TRIES):
            twin = _queued_twin(document_id, chunk_profile_id)
            if twin is not None:
                _join(twin, sync=sync)
                return False
            job = _job_create(document_id, chunk_profile_id)
            if job is not None:
                transaction.on_commit(lambda job=job: _queue_task(job, sync=sync))
                return True
    raise RuntimeError(f"document {document_id}: no job could be queued or joined")


def _queued_twin(document_id: int, chunk_profile_id: int | None) -> ProcessingJob | None:
    """The document's queued job for the profile, locked: no run claims it before the caller commits
    (a run that started now could read the document or the collection as they were before)."""
    return (
        ProcessingJob.objects.select_for_update()
        .filter(document_id=document_id, chunk_profile_id=chunk_profile_id, state=ProcessingJob.State.QUEUED)
        .first()
    )


def _job_create(document_id: int, chunk_profile_id: int | None) -> ProcessingJob | None:
    """A new queued job; None when a concurrent request's twin won the unique index (join it instead)."""
    return _unique_or_none(
        lambda: ProcessingJob.objects.create(
            document_id=document_id, chunk_profile_id=chunk_profile_id, queued_at=timezone.now()
        )
    )


def _unique_or_none(write):
    """``write()`` in a savepoint; None when a queued twin committed first (the unique index on queued
    jobs refused it: a second request that found no twin waits there for the first to commit)."""
    try:
        with transaction.atomic():  # a savepoint: the refused write leaves the caller's work intact
            return write()
    except IntegrityError as exc:
        if not isinstance(exc.__cause__, UniqueViolation):
            raise
        return None


def _join(twin: ProcessingJob, *, sync: bool | None) -> None:
    """A caller that waits for the processing (``sync``) runs the twin here, as it would its own job."""
    if sync:
        transaction.on_commit(lambda: _queue_task(twin, sync=True))


def _queue_task(job: ProcessingJob, *, sync: bool | None = None) -> None:
    options = {"task_name": f"document-{job.document_id}-job-{job.pk}", "group": "ingest"}
    if sync is not None:
        options["sync"] = sync
    # Run here and now (the ingest command's --wait, KNOWLEDGE_SYNC_TASKS), a task processes its own
    # document, which its caller waits for; in a worker it takes the fairest queued job.
    inline = sync if sync is not None else settings.Q_CLUSTER.get("sync", False)
    task_queue(
        PROCESS_DOCUMENT,
        job.document_id,
        job.chunk_profile_id,
        job.pk,
        not inline,
        queue=document_queue(),
        q_options=options,
    )


def job_claim(*, job_id: int) -> Claim | None:
    """Take the job if nobody has: ``queued -> running`` in one statement; None when it is taken or gone.

    PostgreSQL makes a second, concurrent UPDATE wait for the first and then
    re-check its WHERE clause, so exactly one run sees its update count as 1.
    """
    with transaction.atomic():
        if not _start(ProcessingJob.objects.filter(pk=job_id, state=ProcessingJob.State.QUEUED)):
            return None
        job = ProcessingJob.objects.get(pk=job_id)
    return _claim(job)


def job_claim_next(*, job_id: int) -> Claim | None:
    """Take, for the task of ``job_id``, the queued job fairest to run now; None when none is queued.

    Tasks leave the broker in the order they were queued, so a user who uploads
    fifty heavy documents would have every worker busy with them while another
    user's single file waited for all fifty. Instead every task claims the
    oldest queued job of the uploader with the fewest running jobs, among them
    the uploader served longest ago (so with one worker, uploaders take turns),
    and of that uploader's jobs a new document before a release's rebuild
    (documents without an uploader, such as the ingest command's, count as nobody's).
    There is one task per job, so every job still gets a run; the task of a job
    claimed this way finds a job of someone else, or nothing. Rows are locked
    with SKIP LOCKED, so concurrent claims take different jobs.
    """
    with transaction.atomic():
        job = _fairest_queued_job()
        if job is None:
            return None
        _start(ProcessingJob.objects.filter(pk=job.pk))
        job.refresh_from_db()
    if job.pk != job_id:
        logger.info("The task of job %s runs %s first (its uploader has fewer jobs running)", job_id, job)
    return _claim(job)


def _claim(job: ProcessingJob) -> Claim:
    return Claim(
        job_id=job.pk,
        attempt=job.attempts,
        document_id=job.document_id,
        chunk_profile_id=job.chunk_profile_id,
    )


def _fairest_queued_job() -> ProcessingJob | None:
    """The fairest queued job, locked for this transaction (SKIP LOCKED); None when none is free.

    Uploaders are ranked once, from three small grouped queries, and then only the chosen
    uploader's jobs are read: ranking every queued row with correlated subqueries took minutes
    with thousands of jobs queued.
    """
    queued = ProcessingJob.objects.filter(state=ProcessingJob.State.QUEUED).annotate(uploader=_uploader())
    for uploader in _uploaders_in_turn(queued):
        job = (
            queued.filter(uploader=uploader)
            .annotate(rebuild=ExpressionWrapper(Q(chunk_profile__isnull=False), output_field=BooleanField()))
            .order_by("rebuild", "queued_at", "pk")
            .select_for_update(skip_locked=True, of=("self",))
            .first()
        )
        if job is not None:  # else every job of theirs is being claimed by a concurrent run
            return job
    return None


# Turns are taken over the jobs started this recently: older ones say nothing about who waits now.
TURN_MEMORY = datetime.timedelta(hours=1)


def _uploaders_in_turn(queued) -> list[int]:
    """Uploaders with queued jobs, fairest first: fewest jobs running, then served longest ago."""
    waiting = set(queued.order_by().values_list("uploader", flat=True).distinct())
    running = _per_uploader(Count("pk"), state=ProcessingJob.State.RUNNING)
    served = _per_uploader(Max("claimed_at"), claimed_at__gte=timezone.now() - TURN_MEMORY)
    never = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    return sorted(
        waiting, key=lambda uploader: (running.get(uploader, 0), served.get(uploader, never), uploader)
    )


def _per_uploader(aggregate, **filters) -> dict[int, object]:
    jobs = ProcessingJob.objects.filter(**filters).annotate(uploader=_uploader()).order_by()
    return dict(jobs.values("uploader").annotate(value=aggregate).values_list("uploader", "value"))


def _uploader():
    return Coalesce("document__uploaded_by", Value(0))


def _start(jobs) -> int:
    """Mark ``jobs`` as running for this worker (a new attempt); the number of rows changed."""
    now = timezone.now()
    return jobs.update(
        state=ProcessingJob.State.RUNNING,
        attempts=F("attempts") + 1,
        worker=worker_name(),
        claimed_at=now,
        heartbeat_at=now,
    )


def _held(claim: Claim):
    return ProcessingJob.objects.filter(
        pk=claim.job_id, state=ProcessingJob.State.RUNNING, attempts=claim.attempt
    )


def job_beat(*, claim: Claim) -> bool:
    return bool(_held(claim).update(heartbeat_at=timezone.now()))


def job_finish(*, claim: Claim, failed: bool = False) -> bool:
    """Close the job if the run still owns it; False when the claim was lost (nothing changes)."""
    state = ProcessingJob.State.FAILED if failed else ProcessingJob.State.DONE
    return bool(_held(claim).update(state=state, finished_at=timezone.now()))


def _stale_cutoff(now: datetime.datetime) -> datetime.datetime:
    return now - datetime.timedelta(seconds=settings.KNOWLEDGE_PROCESSING_STALE_SECONDS)


def jobs_recover_stale(
    *, now: datetime.datetime | None = None, document_ids=None, workers: list[str] | None = None
) -> list[int]:
    """Put back in the queue the running jobs whose run stopped beating (its worker died).

    With ``workers`` (host:pid names of processes known dead: a cluster the supervisor
    killed), their jobs are recovered at once, without waiting for the stale period.
    A job that has had ``MAX_ATTEMPTS`` runs is failed with its document instead.
    Each stale row is taken under SKIP LOCKED, so two sweeps never re-queue one job
    twice. Returns the ids of the re-queued jobs.
    """
    now = now or timezone.now()
    stale = ProcessingJob.objects.filter(state=ProcessingJob.State.RUNNING)
    if workers is None:
        stale = stale.filter(heartbeat_at__lt=_stale_cutoff(now))
    else:
        stale = stale.filter(worker__in=workers)
    stale = stale.select_for_update(skip_locked=True, of=("self",))
    if document_ids is not None:
        stale = stale.filter(document_id__in=document_ids)
    with transaction.atomic():
        return [job.pk for job in stale if _requeue_or_fail(job, now)]


def _requeue_or_fail(job: ProcessingJob, now: datetime.datetime) -> bool:
    """Queue a dead run's job again (True), or fail it with its document after ``MAX_ATTEMPTS`` runs."""
    if job.attempts >= MAX_ATTEMPTS:
        ProcessingJob.objects.filter(pk=job.pk).update(state=ProcessingJob.State.FAILED, finished_at=now)
        Document.objects.filter(pk=job.document_id, status=Document.Status.PROCESSING).update(
            status=Document.Status.FAILED, error=PROCESSING_INTERRUPTED, updated_at=now
        )
        logger.warning("%s failed: its run died %s times", job, job.attempts)
        return False
    Document.objects.filter(pk=job.document_id, status=Document.Status.PROCESSING).update(
        status=Document.Status.UPLOADED, updated_at=now
    )
    twin = _requeued_or_twin(job, now)
    if twin is not None:
        logger.warning(
            "%s: its run on %s stopped; job %s, queued since, runs instead", job, job.worker, twin.pk
        )
        return False
    logger.warning("%s: its run on %s stopped; queued again", job, job.worker)
    transaction.on_commit(lambda job=job: _queue_task(job))
    return True


def _requeued_or_twin(job: ProcessingJob, now: datetime.datetime) -> ProcessingJob | None:
    """Put ``job`` back in the queue (None), or, when its document was queued for the same profile
    while it ran, close it and return that twin: a document waits for one run per profile
    (``job_enqueue``). The twin takes over the dead runs, so the attempts still bound a document
    that keeps killing its worker."""
    for _ in range(_ENQUEUE_TRIES):
        twin = _queued_twin(job.document_id, job.chunk_profile_id)
        if twin is not None:
            ProcessingJob.objects.filter(pk=twin.pk).update(attempts=Greatest("attempts", job.attempts))
            ProcessingJob.objects.filter(pk=job.pk).update(state=ProcessingJob.State.FAILED, finished_at=now)
            return twin
        if _unique_or_none(lambda: _requeue(job, now)) is not None:
            return None
    raise RuntimeError(f"{job}: neither queued again nor joined to a queued job")


def _requeue(job: ProcessingJob, now: datetime.datetime) -> ProcessingJob:
    ProcessingJob.objects.filter(pk=job.pk).update(state=ProcessingJob.State.QUEUED, queued_at=now)
    return job


def jobs_requeue_lost(
    *, now: datetime.datetime | None = None, queued_before: datetime.datetime | None = None
) -> list[int]:
    """Queue again the jobs nobody claimed for a whole stale period while the broker's queue is empty.

    With an empty queue every task has been handed out; a job still unclaimed after
    that long was in the memory of a worker that died. Queuing a task that was only
    late is harmless: the second copy finds the job claimed and does nothing.
    ``queued_before`` replaces the stale period when the loss is known (the
    supervisor killed a cluster then: whatever it had fetched is gone).
    """
    now = now or timezone.now()
    if queue_depth(queue_broker(document_queue())) > 0:
        return []
    with transaction.atomic():
        lost = list(
            ProcessingJob.objects.filter(
                state=ProcessingJob.State.QUEUED, queued_at__lt=queued_before or _stale_cutoff(now)
            )
            .select_for_update(skip_locked=True)
            .order_by("pk")
        )
        for job in lost:
            ProcessingJob.objects.filter(pk=job.pk).update(queued_at=now)
            logger.warning("%s waited unclaimed with an empty queue; queued again", job)
            transaction.on_commit(lambda job=job: _queue_task(job))
    return [job.pk for job in lost]


def queue_wait(*, now: datetime.datetime | None = None) -> tuple[float | None, float | None]:
    """Seconds the oldest queued job has waited, and since the queue last moved: a job started, or a
    running job beat (a worker busy for minutes with one large document is busy, not stuck). None: none."""
    now = now or timezone.now()
    oldest = (
        ProcessingJob.objects.filter(state=ProcessingJob.State.QUEUED)
        .order_by("queued_at")
        .values_list("queued_at", flat=True)
        .first()
    )
    if oldest is None:
        return None, None
    moved = [moment for moment in (_latest("claimed_at"), _latest("heartbeat_at", running=True)) if moment]
    return (now - oldest).total_seconds(), (now - max(moved)).total_seconds() if moved else None


def _latest(field: str, *, running: bool = False) -> datetime.datetime | None:
    jobs = ProcessingJob.objects.filter(**{f"{field}__isnull": False})  # descending puts NULL first
    if running:
        jobs = jobs.filter(state=ProcessingJob.State.RUNNING)
    return jobs.order_by(f"-{field}").values_list(field, flat=True).first()


def queue_depth(broker) -> int:
    """Tasks waiting in the broker (not yet handed to a cluster)."""
    return int(broker.queue_size() or 0)


def jobs_prune(
    *, now: datetime.datetime | None = None, keep: datetime.timedelta = datetime.timedelta(days=7)
) -> int:
    """Forget finished jobs after a week; a task still carrying one's id then finds nothing to do."""
    now = now or timezone.now()
    finished = (ProcessingJob.State.DONE, ProcessingJob.State.FAILED)
    deleted, _ = ProcessingJob.objects.filter(state__in=finished, finished_at__lt=now - keep).delete()
    return deleted


def worker_heartbeat(
    *, name: str | None = None, cluster: str = "", idle_since: datetime.datetime | None = None
) -> None:
    WorkerHeartbeat.objects.update_or_create(
        name=name or worker_name(),
        defaults={"beat_at": timezone.now(), "cluster": cluster, "idle_since": idle_since},
    )


def worker_heartbeats_prune(*, now: datetime.datetime | None = None) -> int:
    """Forget workers silent for a day (restarted processes get new names)."""
    now = now or timezone.now()
    deleted, _ = WorkerHeartbeat.objects.filter(beat_at__lt=now - datetime.timedelta(days=1)).delete()
    return deleted


def housekeeping_interval() -> float:
    """Seconds between a worker's heartbeats and sweeps: several per stale period, at most 10."""
    return min(10.0, settings.KNOWLEDGE_PROCESSING_STALE_SECONDS / 5)
