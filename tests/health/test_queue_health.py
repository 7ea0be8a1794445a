"""/healthz says when the document queue is not moving, instead of "ok".

Before, a worker held by one user's long task left every upload queued while /healthz
answered 200: it counted heartbeats and the queue's length, never how long a job had waited.
"""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from knowledge.models import ProcessingJob
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_worker(monkeypatch):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)  # the job stays queued: no worker runs here


def _queued_job(user, name: str, waited: datetime.timedelta) -> ProcessingJob:
    collection = collection_create(name=f"{name} collection", owner=user)
    upload = DocumentUpload(filename=name, data=b"A note about the office's opening hours.")
    document = document_upload(collection=collection, uploaded_by=user, sync=False, upload=upload).document
    job = ProcessingJob.objects.get(document=document)
    ProcessingJob.objects.filter(pk=job.pk).update(queued_at=timezone.now() - waited)
    return job


def _queue_check(client) -> tuple[int, dict]:
    response = client.get("/healthz")
    return response.status_code, response.json()["checks"]["queue"]


def test_a_job_waiting_past_the_limit_with_nothing_started_fails_the_queue_check(
    client, alice, no_worker, settings
):
    settings.KNOWLEDGE_QUEUE_STALL_SECONDS = 300
    _queued_job(alice, "waiting.txt", datetime.timedelta(minutes=12))

    status, queue = _queue_check(client)

    assert status == 503
    assert queue["ok"] is False
    assert queue["error"].startswith("the document queue is not moving: its oldest job has waited 7")


def test_a_backlog_being_worked_through_is_busy_not_stuck(client, alice, bob, no_worker, settings):
    settings.KNOWLEDGE_QUEUE_STALL_SECONDS = 300
    _queued_job(alice, "waiting.txt", datetime.timedelta(minutes=12))
    started = _queued_job(bob, "started.txt", datetime.timedelta(minutes=1))
    ProcessingJob.objects.filter(pk=started.pk).update(state="running", claimed_at=timezone.now())

    status, queue = _queue_check(client)

    assert status == 200, queue
    assert queue["oldest_queued_s"] >= 720
    assert {"depth", "long_work_depth"} <= queue.keys()


def test_one_large_document_being_processed_for_minutes_is_busy_not_stuck(
    client, alice, bob, no_worker, settings
):
    """The only worker has been on one document for ten minutes and still beats: nothing started since,
    yet the queue moves."""
    settings.KNOWLEDGE_QUEUE_STALL_SECONDS = 300
    _queued_job(alice, "waiting.txt", datetime.timedelta(minutes=12))
    large = _queued_job(bob, "large.txt", datetime.timedelta(minutes=13))
    ten_minutes_ago = timezone.now() - datetime.timedelta(minutes=10)
    ProcessingJob.objects.filter(pk=large.pk).update(
        state="running", claimed_at=ten_minutes_ago, heartbeat_at=timezone.now()
    )

    status, queue = _queue_check(client)

    assert status == 200, queue


def test_a_short_wait_is_reported_and_healthy(client, alice, no_worker):
    _queued_job(alice, "fresh.txt", datetime.timedelta(seconds=5))

    status, queue = _queue_check(client)

    assert status == 200
    assert 5 <= queue["oldest_queued_s"] < 60
