"""`make run` (scripts/run.sh) on its own embedded PostgreSQL, faults injected into its worker.

A worker process of django-q2's cluster killed while idle (``kill -9``) died inside
``multiprocessing.Queue.get``, holding the read lock of the cluster's task queue: the
worker django-q2 started in its place, and every other worker, waited for that lock
for good. Uploads stayed ``uploaded``, /healthz said ok (the new worker beat), and a
stop hung (the cluster's stop feeds its workers "STOP" through that same queue).
A stop while a worker was busy waited for its task to end.

These tests start the whole process tree as a user does, each on a fresh data
directory (so the embedded PostgreSQL is this test's own), inject the fault, then
send SIGTERM to the process group and require that nothing of it, PostgreSQL
included, is left 10 s later.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO_ROOT
from tests.served import application_environment, free_port

pytestmark = [pytest.mark.slow, pytest.mark.security]

STARTED_WITHIN = 300  # a fresh embedded PostgreSQL: initdb and every migration
PROCESSED_WITHIN = 60
UNHEALTHY_WITHIN = 30
STOPPED_WITHIN = 10
TEXT = "Holidays\n\nEveryone has twenty-five days of paid leave per year.\n"


class RunningProduct:
    """scripts/run.sh in its own process group, on ``data_dir``, serving ``port``."""

    def __init__(self, tmp_path: Path, **environment: str):
        self.port = free_port()
        self.data_dir = tmp_path / "data"
        self.log = tmp_path / "run.log"
        self.env = application_environment(self.port, DATABASE_URL="", KNOWLEDGE_DATA_DIR=str(self.data_dir))
        self.env.update(
            WEB_WORKERS="1", KNOWLEDGE_SYNC_TASKS="false", DJANGO_SETTINGS_MODULE="config.settings"
        )
        self.env.update(environment)  # the test's own settings (they were ignored before)
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                ["bash", str(REPO_ROOT / "scripts" / "run.sh")],
                cwd=REPO_ROOT,
                env=self.env,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        self.seen: dict[int, psutil.Process] = {}

    def output(self) -> str:
        return self.log.read_text()[-4000:]

    def health(self) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=10) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def wait_healthy(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"make run exited with {self.process.returncode}:\n{self.output()}")
            try:
                if self.health()[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(1)
        pytest.fail(f"make run was not healthy within {seconds} s:\n{self.output()}")

    def remember(self) -> None:
        """Every process of the tree so far, and the embedded PostgreSQL's (a child started it, detached)."""
        for process in [psutil.Process(self.process.pid), *self._descendants(), *self.postgres()]:
            self.seen.setdefault(process.pid, process)

    def _descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def postgres(self) -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter(["name", "cmdline"]):
            if process.info["name"] == "postgres" and str(self.data_dir) in " ".join(
                process.info["cmdline"] or []
            ):
                found.append(process)
        return found

    def workers(self) -> list[psutil.Process]:
        """django-q2's worker processes: the cluster's sentinel's children that run `worker`."""
        return [p for p in self._descendants() if _is_worker(p)]

    def alive(self) -> list[str]:
        self.seen.update({p.pid: p for p in self.postgres() + self._descendants()})
        names = []
        for process in self.seen.values():
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    names.append(f"{process.pid} {' '.join(process.cmdline())}")
            except psutil.NoSuchProcess:
                continue
        return names

    def manage(self, *arguments: str) -> str:
        done = subprocess.run(
            [str(REPO_ROOT / ".venv" / "bin" / "python"), "manage.py", *arguments],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def sql(self, query: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(host=str(self.data_dir / "pg"), dbname="knowledge", user="postgres") as conn:
            return conn.execute(query).fetchall()

    def stop_and_check(self) -> None:
        self.remember()
        os.killpg(self.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOPPED_WITHIN
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not self.alive(), (self.alive(), self.output())

    def kill_everything(self) -> None:
        """What a failed test leaves behind."""
        self.seen.update({p.pid: p for p in self.postgres() + self._descendants()})
        for process in self.seen.values():
            try:
                process.kill()
            except psutil.NoSuchProcess:
                continue
        self.process.wait(timeout=30)


def _is_worker(process: psutil.Process) -> bool:
    """A worker of the document queue's cluster is a grandchild of `manage.py qcluster` (its
    sentinel's child) that is neither the pusher nor the monitor: the only children of the sentinel
    that beat a heartbeat row. The long-work queue's cluster (Q_CLUSTER_NAME) is left out."""
    try:
        parent = process.parent()
        grandparent = parent.parent() if parent else None
        if not (grandparent and "qcluster" in " ".join(grandparent.cmdline())):
            return False
        return grandparent.environ().get("Q_CLUSTER_NAME", "knowledge") == "knowledge"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


@pytest.fixture
def product(request, tmp_path):
    running = RunningProduct(tmp_path, **getattr(request, "param", {}))
    try:
        running.wait_healthy(STARTED_WITHIN)
        running.remember()
        yield running
    finally:
        running.kill_everything()


def _heartbeat_pids(product: RunningProduct) -> set[int]:
    return {
        int(name.rsplit(":", 1)[1]) for (name,) in product.sql("SELECT name FROM knowledge_workerheartbeat")
    }


def _upload(product: RunningProduct, tmp_path: Path) -> int:
    path = tmp_path / "leave.txt"
    path.write_text(TEXT)
    out = product.manage("knowledge_ingest", str(path), "--collection", "faults", "--create", "--json")
    return json.loads(out.strip().splitlines()[-1])["document_id"]


def _document_status(product: RunningProduct, document_id: int) -> str:
    return product.sql(f"SELECT status FROM knowledge_document WHERE id = {int(document_id)}")[0][0]


def _idle_worker(product: RunningProduct) -> psutil.Process:
    """A worker process of the cluster (it beats a heartbeat; the pusher and monitor do not) that
    waits for a task: no CPU time used for 1.5 s (the worker's first task, which imports the
    pipeline, takes seconds of CPU)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        beating = _heartbeat_pids(product)
        for worker in [p for p in product.workers() if p.pid in beating]:
            before = sum(worker.cpu_times()[:2])
            time.sleep(1.5)
            if sum(worker.cpu_times()[:2]) == before:
                return worker
        time.sleep(1)
    pytest.fail(f"no idle worker process found:\n{product.output()}")


def test_an_idle_worker_killed_outright_neither_stops_ingestion_nor_a_stop(product, tmp_path):
    victim = _idle_worker(product)
    victim.kill()  # kill -9 while it waits for a task
    victim.wait(timeout=10)
    killed_at = time.monotonic()
    document_id = _upload(product, tmp_path)

    unhealthy_at = None
    while time.monotonic() - killed_at < PROCESSED_WITHIN:
        if _document_status(product, document_id) == "ready":
            break
        if unhealthy_at is None and product.health()[0] == 503:
            unhealthy_at = time.monotonic() - killed_at
        time.sleep(1)
    status = _document_status(product, document_id)
    product.remember()
    if status != "ready":
        # The other acceptable outcome: the probe fails fast, and the cluster is replaced.
        assert unhealthy_at is not None and unhealthy_at <= UNHEALTHY_WITHIN, (status, product.output())
        pytest.fail(f"document {status} {PROCESSED_WITHIN} s after the fault:\n{product.output()}")
    product.stop_and_check()


# Heartbeats every 2 s and a probe limit of 5 s: the busy worker outlasts both many times over.
QUICK_PROBES = {"KNOWLEDGE_PROCESSING_STALE_SECONDS": "10", "KNOWLEDGE_WORKER_PROBE_SECONDS": "5"}


@pytest.mark.parametrize("product", [QUICK_PROBES], indirect=True)
def test_a_stop_while_a_worker_is_busy_abandons_its_task_within_seconds(product):
    # A task that would run for ten minutes: the stop must not wait for it.
    product.manage("shell", "-c", "from django_q.tasks import async_task; async_task('time.sleep', 600)")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = product.sql("SELECT count(*) FROM django_q_ormq WHERE lock > now()")[0][0]
        if running:
            break
        time.sleep(0.5)
    assert running, product.output()
    cluster = [p.pid for p in product.workers()]
    # A busy cluster is not a stuck one: its probe waits behind the task, and nothing replaces it.
    # Told by the probe itself: unanswered for three times the probe limit (5 s), long past the
    # point where a cluster that took no task would have been replaced.
    waiting = (
        "SELECT count(*) FROM knowledge_workerprobe"
        " WHERE answered_at IS NULL AND sent_at < now() - interval '15 s'"
    )
    deadline = time.monotonic() + 90
    while not product.sql(waiting)[0][0]:
        assert time.monotonic() < deadline, product.output()
        time.sleep(0.5)
    status, body = product.health()
    assert status == 200, body
    assert [p.pid for p in product.workers()] == cluster, product.output()
    product.stop_and_check()


def test_a_worker_process_killed_outright_by_make_runs_side_leaves_no_cluster_behind(product):
    """The process `make run` started for the worker dies without stopping its cluster (kill -9):
    the cluster must not live on, taking tasks nobody can stop."""
    product.remember()
    run = psutil.Process(product.process.pid)
    worker = next(p for p in run.children() if "manage.py" in " ".join(p.cmdline()))
    cluster = [p for p in product.seen.values() if p.pid != worker.pid and _in_cluster(p)]
    assert cluster, product.output()
    worker.kill()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _running(cluster):
        time.sleep(0.5)
    assert not _running(cluster), (_running(cluster), product.output())


def _in_cluster(process: psutil.Process) -> bool:
    try:
        return "qcluster" in " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return False


def _running(processes: list[psutil.Process]) -> list[int]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process.pid)
        except psutil.NoSuchProcess:
            continue
    return alive
