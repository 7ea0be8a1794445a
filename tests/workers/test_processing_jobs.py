"""Processing jobs in one process: the claim, the sweep of dead runs and lost tasks, and pruning.

The same rules with real worker processes (three of them, one killed) are in test_scale_out.py.
"""

from __future__ import annotations

import datetime
import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from knowledge.ingestion.pipeline import document_process
from knowledge.models import ChunkProfile, Document, ProcessingJob
from knowledge.processing_jobs import (
    MAX_ATTEMPTS,
    job_claim,
    job_enqueue,
    jobs_prune,
    jobs_recover_stale,
    jobs_requeue_lost,
)
from knowledge.services.collections import collection_create
from knowledge.services.documents import PROCESSING_INTERRUPTED, DocumentUpload, document_upload
from knowledge.tasks import process_document
from tests.waiting import until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queued(alice, monkeypatch):
    """An uploaded document whose job waits in the (ORM) queue: no worker runs in this test."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)  # re-queued tasks go to the queue, not run here
    collection = collection_create(name="jobs", owner=alice)
    document = document_upload(
        collection=collection,
        sync=False,
        upload=DocumentUpload(filename="leave.txt", data=b"Everyone has 25 days of leave."),
    ).document
    return document, ProcessingJob.objects.get(document=document)


def _age(job: ProcessingJob, **fields_seconds) -> None:
    past = {name: timezone.now() - datetime.timedelta(seconds=s) for name, s in fields_seconds.items()}
    ProcessingJob.objects.filter(pk=job.pk).update(**past)


def test_a_job_is_claimed_once(queued):
    _, job = queued
    first = job_claim(job_id=job.pk)
    assert first is not None and first.attempt == 1
    assert job_claim(job_id=job.pk) is None  # a second delivery of the task
    job.refresh_from_db()
    assert (job.state, job.attempts) == (ProcessingJob.State.RUNNING, 1)


@pytest.mark.slow
def test_a_second_delivery_of_a_done_job_does_nothing(queued):
    document, job = queued
    process_document(document.pk, None, job.pk)
    job.refresh_from_db()
    document.refresh_from_db()
    assert (job.state, document.status) == (ProcessingJob.State.DONE, Document.Status.READY)
    processed_at = document.processed_at
    process_document(document.pk, None, job.pk)
    document.refresh_from_db()
    assert document.processed_at == processed_at


def test_a_run_that_stopped_beating_is_queued_again_then_failed_after_its_attempts(queued, settings):
    document, job = queued
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert job_claim(job_id=job.pk).attempt == attempt
        Document.objects.filter(pk=document.pk).update(status=Document.Status.PROCESSING)
        _age(job, heartbeat_at=settings.KNOWLEDGE_PROCESSING_STALE_SECONDS + 5)
        requeued = jobs_recover_stale()
        job.refresh_from_db()
        document.refresh_from_db()
        if attempt < MAX_ATTEMPTS:
            assert requeued == [job.pk] and job.state == ProcessingJob.State.QUEUED
            assert document.status == Document.Status.UPLOADED
    assert requeued == [] and job.state == ProcessingJob.State.FAILED
    assert (document.status, document.error) == (Document.Status.FAILED, PROCESSING_INTERRUPTED)


def test_a_live_run_is_left_alone(queued):
    _, job = queued
    job_claim(job_id=job.pk)
    assert jobs_recover_stale() == []


@pytest.mark.slow
def test_a_run_that_lost_its_claim_writes_nothing(queued, settings):
    document, job = queued
    claim = job_claim(job_id=job.pk)
    # Taken for dead and handed to another run before this one reached its final write.
    _age(job, heartbeat_at=settings.KNOWLEDGE_PROCESSING_STALE_SECONDS + 5)
    assert jobs_recover_stale() == [job.pk]
    assert job_claim(job_id=job.pk).attempt == 2
    document_process(document_id=document.pk, claim=claim)
    assert not document.chunks.exists()
    job.refresh_from_db()
    assert (job.state, job.attempts) == (ProcessingJob.State.RUNNING, 2)


def test_a_job_unclaimed_while_the_queue_is_empty_is_queued_again(queued, settings):
    from django_q.models import OrmQ

    _, job = queued
    assert jobs_requeue_lost() == []  # too young
    _age(job, queued_at=settings.KNOWLEDGE_PROCESSING_STALE_SECONDS + 5)
    assert jobs_requeue_lost() == []  # its task still waits in the queue
    OrmQ.objects.all().delete()  # what a worker that popped it and died leaves behind
    assert jobs_requeue_lost() == [job.pk]
    assert OrmQ.objects.count() == 1  # queued again
    assert jobs_requeue_lost() == []  # its new queued_at is fresh


def test_finished_jobs_are_pruned_after_a_week(queued):
    _, job = queued
    ProcessingJob.objects.filter(pk=job.pk).update(state=ProcessingJob.State.DONE)
    _age(job, finished_at=8 * 24 * 3600)
    assert jobs_prune() == 1
    assert not ProcessingJob.objects.exists()


def test_a_task_run_in_this_process_starts_no_housekeeping(queued, monkeypatch):
    """Sync tasks go through django-q2's worker function here too; no heartbeat may come of it."""
    import threading

    from django_q.conf import Conf

    from knowledge.models import WorkerHeartbeat

    monkeypatch.setattr(Conf, "SYNC", True)
    from django_q.tasks import async_task

    async_task("math.floor", 1.5)
    assert not [t for t in threading.enumerate() if t.name == "knowledge-housekeeping"]
    assert not WorkerHeartbeat.objects.exists()


def test_a_request_while_the_document_waits_joins_its_queued_job(queued):
    document, job = queued
    assert job_enqueue(document_id=document.pk) is False  # the same run serves both requests
    other = ChunkProfile.objects.create(name="fixed 100", strategy="fixed", chunk_size=100, chunk_overlap=0)
    assert job_enqueue(document_id=document.pk, chunk_profile_id=other.pk) is True  # another set
    assert job_enqueue(document_id=document.pk, chunk_profile_id=other.pk) is False
    job_claim(job_id=job.pk)  # under way: it may have read the document before this request
    assert job_enqueue(document_id=document.pk) is True
    queued_jobs = ProcessingJob.objects.filter(document=document, state=ProcessingJob.State.QUEUED)
    assert sorted(queued_jobs.values_list("chunk_profile", flat=True), key=str) == [other.pk, None]


def _lock_waits() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def test_two_requests_at_once_leave_one_queued_job(queued):
    document, job = queued
    job_claim(job_id=job.pk)  # its run started: the next request queues a job of its own
    inserted, may_commit, results = threading.Event(), threading.Event(), {}

    def request(name: str, before=None, after=None) -> None:
        try:
            if before:
                before.wait(60)
            with transaction.atomic():
                results[name] = job_enqueue(document_id=document.pk)
                if after:
                    after()
        finally:
            connection.close()

    def hold_until_told() -> None:
        inserted.set()
        may_commit.wait(60)

    first = threading.Thread(target=request, args=("first",), kwargs={"after": hold_until_told})
    second = threading.Thread(target=request, args=("second",), kwargs={"before": inserted})
    first.start()
    second.start()
    # The second waits for the first to commit (its insert meets the first's in the unique index).
    until(lambda: _lock_waits() > 0 or not second.is_alive(), "the second request waiting on the first")
    may_commit.set()
    first.join(60)
    second.join(60)
    assert results == {"first": True, "second": False}
    assert ProcessingJob.objects.filter(document=document, state=ProcessingJob.State.QUEUED).count() == 1


def test_a_dead_run_whose_document_was_asked_for_again_meanwhile_joins_the_queued_job(queued, settings):
    document, job = queued
    job_claim(job_id=job.pk)
    Document.objects.filter(pk=document.pk).update(status=Document.Status.PROCESSING)
    assert job_enqueue(document_id=document.pk) is True  # asked for again while it ran
    _age(job, heartbeat_at=settings.KNOWLEDGE_PROCESSING_STALE_SECONDS + 5)
    assert jobs_recover_stale() == []  # not queued a second time: the waiting job runs instead
    waiting = ProcessingJob.objects.get(document=document, state=ProcessingJob.State.QUEUED)
    job.refresh_from_db()
    document.refresh_from_db()
    assert job.state == ProcessingJob.State.FAILED and job.finished_at is not None
    assert waiting.attempts == 1  # the dead run counts: a document that kills workers still fails
    assert document.status == Document.Status.UPLOADED
