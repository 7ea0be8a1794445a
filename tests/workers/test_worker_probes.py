"""The probe round trip and the verdict read from it (knowledge.worker_probes), on the real database.

A cluster is stuck only when its probe has waited past the limit while one of its
workers has been idle as long: a probe waiting behind a busy worker, or one that a
worker just freed will take, is no fault. The supervisor's recovery of a killed
cluster's jobs is here too (tests/workers/test_worker_faults.py runs the whole of it).
"""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone
from django_q.models import OrmQ

from knowledge.models import ProcessingJob, WorkerHeartbeat, WorkerProbe
from knowledge.processing_jobs import job_claim, jobs_recover_stale
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.worker_probes import clusters_stuck, probe_answer, probe_send

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

CLUSTER = "host:100"


@pytest.fixture(autouse=True)
def queued_not_run(monkeypatch):
    """Tasks wait in the ORM broker, as with a cluster (the tests' settings run them in-process)."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)


def _ago(seconds: float) -> datetime.datetime:
    return timezone.now() - datetime.timedelta(seconds=seconds)


def _beat(name: str, *, idle_for: float | None, beat_ago: float = 1) -> None:
    idle_since = None if idle_for is None else _ago(idle_for)
    WorkerHeartbeat.objects.create(name=name, cluster=CLUSTER, beat_at=_ago(beat_ago), idle_since=idle_since)


def _stuck() -> dict[str, float]:
    return clusters_stuck(alive_since=_ago(30))


def test_one_probe_is_in_flight_per_cluster_and_only_its_own_answer_counts(settings):
    assert probe_send(cluster=CLUSTER) is True
    assert probe_send(cluster=CLUSTER) is False  # the first still waits
    assert OrmQ.objects.count() == 1
    probe = WorkerProbe.objects.get(cluster=CLUSTER)
    assert probe_answer(cluster=CLUSTER, sent_at=_ago(60).isoformat()) is False  # an older probe's late copy
    assert probe_answer(cluster=CLUSTER, sent_at=probe.sent_at.isoformat()) is True
    assert probe_send(cluster=CLUSTER) is True
    assert OrmQ.objects.count() == 2


def test_a_fresh_probe_replaces_one_that_waited_through_an_outage(settings):
    settings.KNOWLEDGE_WORKER_PROBE_SECONDS = 15
    old = WorkerProbe.objects.create(cluster=CLUSTER, sent_at=_ago(60))
    _beat("host:101", idle_for=60)
    assert list(_stuck()) == [CLUSTER]
    assert probe_send(cluster=CLUSTER) is False  # still in flight
    assert probe_send(cluster=CLUSTER, fresh=True) is True
    assert _stuck() == {}  # the new probe has just left
    assert probe_answer(cluster=CLUSTER, sent_at=old.sent_at.isoformat()) is False  # the old one's answer


def test_a_probe_overdue_while_a_worker_has_long_been_idle_means_stuck(settings):
    settings.KNOWLEDGE_WORKER_PROBE_SECONDS = 15
    WorkerProbe.objects.create(cluster=CLUSTER, sent_at=_ago(20))
    _beat("host:101", idle_for=60)
    assert list(_stuck()) == [CLUSTER]
    assert 19 < _stuck()[CLUSTER] < 30


@pytest.mark.parametrize(
    "case",
    ["young probe", "answered probe", "busy worker", "worker idle only lately", "silent worker"],
)
def test_a_busy_or_just_freed_cluster_is_not_stuck(settings, case):
    settings.KNOWLEDGE_WORKER_PROBE_SECONDS = 15
    sent = _ago(5 if case == "young probe" else 20)
    answered = timezone.now() if case == "answered probe" else None
    WorkerProbe.objects.create(cluster=CLUSTER, sent_at=sent, answered_at=answered)
    idle_for = {"busy worker": None, "worker idle only lately": 3}.get(case, 60)
    _beat("host:101", idle_for=idle_for, beat_ago=60 if case == "silent worker" else 1)
    assert _stuck() == {}


def test_the_running_jobs_of_killed_workers_are_queued_again_at_once(alice):
    collection = collection_create(name="killed", owner=alice)
    for name in ("killed", "alive"):
        data = f"{name} text".encode()
        name = f"{name}.txt"
        document_upload(
            collection=collection,
            uploaded_by=alice,
            sync=False,
            upload=DocumentUpload(filename=name, data=data),
        )
    jobs = list(ProcessingJob.objects.order_by("pk"))
    assert len(jobs) == 2
    for job in jobs:
        job_claim(job_id=job.pk)
    ProcessingJob.objects.filter(pk=jobs[0].pk).update(worker="host:201")
    ProcessingJob.objects.filter(pk=jobs[1].pk).update(worker="host:202")
    # Both beat just now: the stale sweep would leave them; the supervisor knows host:201 is dead.
    assert jobs_recover_stale() == []
    assert jobs_recover_stale(workers=["host:201"]) == [jobs[0].pk]
    states = dict(ProcessingJob.objects.values_list("pk", "state"))
    assert states == {jobs[0].pk: ProcessingJob.State.QUEUED, jobs[1].pk: ProcessingJob.State.RUNNING}


def test_probe_lines_are_left_out_of_the_log_but_not_their_failures():
    import logging

    from knowledge.worker_probes import PROBE_TASK, QuietProbes

    def record(level: int, message: str, thread: str = "MainThread") -> logging.LogRecord:
        made = logging.LogRecord("django-q", level, __file__, 1, message, None, None)
        made.threadName = thread
        return made

    quiet = QuietProbes()
    assert not quiet.filter(record(logging.INFO, f"Processed '{PROBE_TASK}' (probe-host:1)"))
    assert not quiet.filter(record(logging.INFO, "Enqueued [knowledge] 7", thread="knowledge-housekeeping"))
    assert quiet.filter(record(logging.ERROR, f"Failed '{PROBE_TASK}' (probe-host:1)"))
    assert quiet.filter(record(logging.INFO, "Processed 'knowledge.tasks.process_document' (document-1)"))
    assert quiet.filter(record(logging.INFO, "Enqueued [knowledge] 8"))  # a web process's upload


def test_a_cluster_that_keeps_failing_at_start_is_restarted_ever_more_slowly():
    from knowledge.worker_supervisor import LONGEST_RESTART_PAUSE, restart_pause

    pauses = [restart_pause(failures) for failures in range(0, 10)]
    assert pauses[:2] == [0.0, 0.0]  # a cluster that ran a while, or failed once, is replaced at once
    assert pauses[2:6] == [1.0, 2.0, 4.0, 8.0]
    assert max(pauses) == LONGEST_RESTART_PAUSE
