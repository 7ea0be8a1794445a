"""Several workers (`manage.py qcluster` processes) on one queue, on the ORM broker and on Redis.

Three real worker processes share the queue of 30 real documents; one of them
is killed with SIGKILL (with its child processes) while it processes a document. Every document must end
ready, written by exactly one run (counted from the workers' logs), and the
killed run's job must have been queued again and finished by another worker.
Redis pops a task without acknowledgement and each cluster pre-fetches tasks
into its memory, so the killed cluster also takes queued tasks with it: the
sweep re-queues those jobs too. The stale period is shortened to 10 s.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from django_q.conf import Conf

from knowledge.models import Document, ProcessingJob
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.conftest import REPO_ROOT, test_database_url
from tests.redis_server import redis_server

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WORKERS = 3
DOCUMENTS = 30
STALE_SECONDS = 10
READY_LINE = re.compile(r"Document (\d+) ready: \d+ chunks \(job (\d+), run (\d+)\)")


@contextlib.contextmanager
def worker_processes(count: int, log_dir: Path, **environment: str) -> Iterator[list[subprocess.Popen]]:
    """``count`` qcluster processes, each in a process group of its own (to kill one with its children)."""
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "KNOWLEDGE_SYNC_TASKS": "false",
        "KNOWLEDGE_WORKERS": "1",
        "KNOWLEDGE_PROCESSING_STALE_SECONDS": str(STALE_SECONDS),
        **environment,
    }
    processes = []
    try:
        for n in range(count):
            with (log_dir / f"worker-{n}.log").open("w") as out:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, "manage.py", "qcluster"],
                        cwd=REPO_ROOT,
                        env=env,
                        stdout=out,
                        stderr=out,
                        start_new_session=True,
                    )
                )
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()  # the cluster's own process stops its children
        for process in processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture(params=["orm", "redis"])
def broker(request, tmp_path, monkeypatch, settings):
    """The broker the workers and this test's enqueuing share; yields the workers' extra environment."""
    settings.MEDIA_ROOT = tmp_path / "media"  # where the workers read the stored originals
    environment = {"KNOWLEDGE_MEDIA_ROOT": str(tmp_path / "media")}
    if request.param == "orm":
        yield environment
        return
    with redis_server(tmp_path) as url:
        # django-q2 reads its configuration once, at import: point this process's queue at Redis.
        monkeypatch.setattr(Conf, "ORM", None)
        monkeypatch.setattr(Conf, "REDIS", url)
        yield environment | {"REDIS_URL": url}


def _documents(corpus: Path) -> list[tuple[str, bytes]]:
    """The 30 smallest release notes of the Django documentation (real text, one or two chunks each)."""
    releases = sorted(
        (corpus / "django-docs" / "releases").glob("[1-5].*.txt"), key=lambda p: p.stat().st_size
    )
    return [(path.name, path.read_bytes()) for path in releases[:DOCUMENTS]]


def _wait_for(condition, *, seconds: float, what: str, logs) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    pytest.fail(f"{what} within {seconds} s\n{logs()}")


def test_every_document_is_processed_once_by_three_workers_one_of_them_killed(
    broker, alice, corpus, tmp_path
):
    collection = collection_create(name="scale-out", owner=alice)

    def logs() -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-2500:]}" for p in sorted(tmp_path.glob("worker-*.log"))
        )

    with worker_processes(WORKERS, tmp_path, **broker) as workers:
        documents = [
            document_upload(
                collection=collection,
                uploaded_by=alice,
                sync=False,
                upload=DocumentUpload(filename=name, data=data),
            ).document
            for name, data in _documents(corpus)
        ]
        first = documents[0]

        # Kill the worker that runs the first document while it processes it (loading the model, embedding).
        def first_one_running() -> bool:
            return ProcessingJob.objects.filter(
                document=first, state=ProcessingJob.State.RUNNING, document__status=Document.Status.PROCESSING
            ).exists()

        _wait_for(first_one_running, seconds=180, what="the first document was never processed", logs=logs)
        job = ProcessingJob.objects.get(document=first)
        worker_pid = int(job.worker.rsplit(":", 1)[1])
        victim = next(p for p in workers if p.pid == os.getpgid(worker_pid))
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()

        def all_settled() -> bool:
            statuses = set(Document.objects.filter(collection=collection).values_list("status", flat=True))
            return statuses <= {Document.Status.READY, Document.Status.FAILED}

        _wait_for(all_settled, seconds=240, what="the documents were not all processed", logs=logs)

    failed = Document.objects.filter(collection=collection).exclude(status=Document.Status.READY)
    assert not failed.exists(), [(d.filename, d.error) for d in failed]
    jobs = ProcessingJob.objects.filter(document__collection=collection)
    assert jobs.count() == DOCUMENTS
    assert set(jobs.values_list("state", flat=True)) == {ProcessingJob.State.DONE}

    # Each document written by exactly one run, according to the workers that wrote them.
    written = Counter(int(match[0]) for match in READY_LINE.findall(logs_text(tmp_path)))
    assert written == Counter({document.pk: 1 for document in documents}), logs()

    # The killed run's job was claimed again and finished elsewhere; nothing else needed a second run.
    job.refresh_from_db()
    assert job.attempts == 2, job
    assert job.worker != f"{job.worker.rsplit(':', 1)[0]}:{worker_pid}"
    assert set(jobs.exclude(pk=job.pk).values_list("attempts", flat=True)) == {1}
    for document in Document.objects.filter(collection=collection):
        assert document.chunks.count() == document.chunks_total > 0, document.filename


def logs_text(directory: Path) -> str:
    return "".join(path.read_text() for path in sorted(directory.glob("worker-*.log")))
