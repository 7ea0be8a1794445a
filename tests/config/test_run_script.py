"""`make run` (scripts/run.sh) stops within seconds, however the signal reaches it.

A SIGTERM to the whole process group (``kill -TERM -- -PGID``, what a shell's job
control or a process manager may send) used to reach django-q2's cluster twice: once
directly and once from the script's stop(). The second signal, arriving while the
cluster was stopping, left it (and the embedded PostgreSQL, its client) running for good.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request

import psutil
import pytest

from tests.conftest import REPO_ROOT
from tests.served import application_environment, free_port

STARTED_WITHIN = 240  # migrations are already applied; the worker and the web processes start
STOPPED_WITHIN = 30


def _wait_until_healthy(port: int, process: subprocess.Popen, log) -> None:
    """Until /healthz says ok: the web processes answer and the worker's cluster is running."""
    deadline = time.monotonic() + STARTED_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"make run exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    pytest.fail(f"make run was not healthy within {STARTED_WITHIN} s:\n{log.read_text()[-3000:]}")


def _alive(processes: list[psutil.Process]) -> list[str]:
    alive = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(" ".join(process.cmdline()))
        except psutil.NoSuchProcess:
            continue
    return alive


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_whole_process_group_stops_the_worker_and_the_web_server(
    transactional_db, tmp_path, signal_number
):
    port = free_port()
    log = tmp_path / "run.log"
    env = application_environment(port, KNOWLEDGE_MEDIA_ROOT=str(tmp_path / "media"), WEB_WORKERS="1")
    with log.open("w") as out:
        process = subprocess.Popen(
            ["bash", str(REPO_ROOT / "scripts" / "run.sh")],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,  # its own process group, as in a terminal
        )
    started = psutil.Process(process.pid)
    everything = [started]
    try:
        _wait_until_healthy(port, process, log)
        everything += started.children(recursive=True)
        assert any("qcluster" in " ".join(p.cmdline()) for p in everything[1:])
        # With DATABASE_URL (the test database) nothing watches the server: it is its operator's.
        assert not any("database_watch" in " ".join(p.cmdline()) for p in everything[1:])
        os.killpg(process.pid, signal_number)
        deadline = time.monotonic() + STOPPED_WITHIN
        while _alive(everything) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _alive(everything), (_alive(everything), log.read_text()[-3000:])
    finally:
        _kill(everything + _children(started))
        process.wait(timeout=30)


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _kill(processes: list[psutil.Process]) -> None:
    """What a failed test leaves behind (a worker still stopping, its web processes)."""
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            continue
