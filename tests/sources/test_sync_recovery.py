"""A sync whose process dies: a worker of a real cluster (`manage.py qcluster`) killed outright in the
middle of a sync, which the sweep of the workers fails with its reason within seconds, so the next
sync starts; a sync taken for dead that was only late writes nothing more; a task delivered twice
runs its sync once."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
from django.db import connection
from django_q.tasks import async_task

from knowledge.models import SourceItem, SourceSync
from knowledge.processing_jobs import worker_name
from knowledge.services.collections import collection_create
from knowledge.services.sources import SYNC_TASK, SourceSpec, source_add, source_sync
from knowledge.services.sync_liveness import WORKER_STOPPED, syncs_fail_stale
from knowledge.tasks import sync_source
from tests.conftest import REPO_ROOT, test_database_url
from tests.served import LoopbackHandler

pytestmark = pytest.mark.django_db(transaction=True)

STARTED_WITHIN = 180  # the cluster's start and its first task, on a busy machine
RECOVERED_WITHIN = 60  # 10 s stale period: beats every 2 s, taken for dead after 6 s of silence
PAGE = (
    b"<html><body><h1>Opening hours</h1><p>The harbour office opens at eight, the ferry leaves at "
    b"nine, and the lighthouse keeper writes the weather on a slate by the door every morning.</p>"
    b"</body></html>"
)


class HeldSite(LoopbackHandler):
    """One page, answered only once the server's ``answer`` is set; ``asked`` tells it was asked."""

    def do_GET(self):  # noqa: N802 (the standard library's name)
        if self.path == "/robots.txt":
            body, status = b"", 404
        else:
            self.server.asked.set()
            self.server.answer.wait()
            body, status = PAGE, 200
        self.send_body(status, body)


@pytest.fixture
def held_site(settings):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HeldSite)
    server.daemon_threads = True
    server.asked, server.answer = threading.Event(), threading.Event()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.1/32"
    yield server
    server.answer.set()
    server.shutdown()


@pytest.fixture
def cluster(tmp_path):
    """`manage.py qcluster` on the test database, one worker, sweeping every 2 s."""
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "KNOWLEDGE_SYNC_TASKS": "false",
        "KNOWLEDGE_WORKERS": "1",
        "KNOWLEDGE_PROCESSING_STALE_SECONDS": "10",
        "KNOWLEDGE_SOURCES_ALLOWED_NETWORKS": "127.0.0.1/32",
        "KNOWLEDGE_MEDIA_ROOT": str(tmp_path / "media"),
    }
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"], cwd=REPO_ROOT, env=env, stdout=out, stderr=out,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield process, log
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def wait_for(condition, seconds: float, what: str, log=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what} not within {seconds} s" + (f":\n{log.read_text()[-3000:]}" if log else ""))


def connected_to(cluster: subprocess.Popen, port: int) -> psutil.Process | None:
    """The process of the cluster holding a connection to ``port``: the worker running the sync."""
    for process in psutil.Process(cluster.pid).children(recursive=True):
        try:
            if any(c.raddr and c.raddr.port == port for c in process.net_connections(kind="tcp")):
                return process
        except psutil.NoSuchProcess:
            continue
    return None


def test_a_sync_whose_worker_is_killed_is_failed_by_the_sweep_and_the_next_sync_starts(
    cluster, held_site, alice, settings
):
    process, log = cluster
    settings.KNOWLEDGE_PROCESSING_STALE_SECONDS = 10  # as the cluster's: this process's syncs beat as often
    port = held_site.server_address[1]
    source = source_add(
        collection=collection_create(name="held", owner=alice),
        spec=SourceSpec(location=f"http://127.0.0.1:{port}/", grace_hours=0),
        user=alice,
    )
    async_task(SYNC_TASK, source.pk, "test", sync=False)  # for the cluster, not run here
    wait_for(held_site.asked.is_set, STARTED_WITHIN, "the worker's request for the page", log)
    running = SourceSync.objects.get(source=source)
    assert running.status == "running"
    victim = wait_for(lambda: connected_to(process, port), 30, "the worker's connection", log)
    victim.kill()  # kill -9 in the middle of the sync
    victim.wait(timeout=10)
    killed_at = time.monotonic()

    wait_for(lambda: SourceSync.objects.get(pk=running.pk).status != "running", RECOVERED_WITHIN,
             "the sync's recovery", log)  # fmt: skip
    recovered = SourceSync.objects.get(pk=running.pk)
    assert recovered.status == "failed" and recovered.error.startswith(WORKER_STOPPED), recovered.error
    assert recovered.finished_at is not None
    print(f"recovered {time.monotonic() - killed_at:.1f} s after the kill")

    held_site.answer.set()
    again = source_sync(source=source, trigger="test")  # not "being synced already"
    assert (again.status, again.added) == ("succeeded", 1), (again.error, again.errors)


def in_thread(finished: list, source) -> threading.Thread:
    """A sync in a thread of its own (with its own database connection, closed at its end)."""

    def run():
        try:
            finished.append(source_sync(source=source, trigger="test"))
        finally:
            connection.close()

    return threading.Thread(target=run)


def test_a_sync_taken_for_dead_that_was_only_late_stops_without_writing(held_site, alice):
    port = held_site.server_address[1]
    source = source_add(
        collection=collection_create(name="late", owner=alice),
        spec=SourceSpec(location=f"http://127.0.0.1:{port}/", grace_hours=0),
        user=alice,
    )
    finished = []
    late = in_thread(finished, source)
    late.start()
    assert held_site.asked.wait(60)
    # The sweep is told this process is dead (as of a killed cluster's processes); its sync runs on.
    assert syncs_fail_stale(sources=[source], workers=[worker_name()]) == 1
    new = in_thread(finished, source)
    held_site.answer.set()
    late.join(60)
    [stopped] = finished
    assert (stopped.status, stopped.error.startswith(WORKER_STOPPED)) == ("failed", True), stopped.error
    assert not SourceItem.objects.filter(source=source).exists()  # the late run wrote nothing
    new.start()
    new.join(60)
    assert finished[1].status == "succeeded" and finished[1].added == 1


def test_a_task_delivered_twice_runs_its_sync_once(held_site, alice):
    held_site.answer.set()
    port = held_site.server_address[1]
    source = source_add(
        collection=collection_create(name="twice", owner=alice),
        spec=SourceSpec(location=f"http://127.0.0.1:{port}/"),
        user=alice,
    )
    first = sync_source(source.pk, "api", "ticket-1")
    assert SourceSync.objects.get(pk=first).status == "succeeded"
    assert sync_source(source.pk, "api", "ticket-1") is None  # the same request, delivered again
    assert SourceSync.objects.filter(source=source).count() == 1
    assert sync_source(source.pk, "api", "ticket-2") is not None  # another request
