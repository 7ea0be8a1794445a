"""`make run` starts its embedded PostgreSQL again when that server dies.

Killed outright (SIGKILL, the OOM killer) or crashed, the embedded server used to
stay down: every surface answered 503 with Retry-After, honestly, until someone
restarted `make run`. Now the server is started again within seconds on the same
data directory, and the web processes and the worker answer again by themselves.
A server stopped on purpose (the last client left, `make run` stopped) stays stopped.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from config.base.database import embedded_pgdata
from config.base.database_watch import postmaster_died, restart, server_handle
from tests.config.test_run_script import (
    STARTED_WITHIN,
    STOPPED_WITHIN,
    _alive,
    _children,
    _kill,
    _wait_until_healthy,
)
from tests.conftest import REPO_ROOT
from tests.served import application_environment, free_port

RECOVERED_WITHIN = 90  # generous: the server is started again within seconds
RESTARTED_LINE = "the embedded PostgreSQL stopped; started it again"
CLUSTER_RUNNING = re.compile(r"Q Cluster .+ running\.")  # django-q2's line once its cluster has started
# A made-up session: loading it reads the database, and the log-in page answers 200 once it can.
PAGE = ("/accounts/login/", {"Cookie": "sessionid=" + "x" * 32})


def _get(port: int, path: str, headers: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    except OSError as exc:
        return 0, str(exc).encode()
    finally:
        conn.close()


def _postmaster(pgdata: Path) -> psutil.Process | None:
    """The running postmaster of ``pgdata`` (the first line of its postmaster.pid), or None."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process
    except (FileNotFoundError, ValueError, psutil.NoSuchProcess):
        return None


def _answering_again(port: int) -> bool:
    """/healthz says the database is ok and a page that reads the database answers 200."""
    status, body = _get(port, "/healthz")
    try:
        database_ok = json.loads(body)["checks"]["database"]["ok"]
    except (ValueError, KeyError):
        database_ok = False
    return status == 200 and database_ok and _get(port, *PAGE)[0] == 200


@pytest.fixture
def server(tmp_path):
    """An embedded server started the way the watch starts one: no process on its list of clients."""
    pgdata = embedded_pgdata(tmp_path)
    pgdata.mkdir()
    handle = server_handle(pgdata)
    with handle._lock:
        handle.ensure_pgdata_inited()
        handle.ensure_postgres_running()
    yield handle
    _stop_left_over(pgdata)


def _kill_and_wait(pgdata: Path) -> int:
    """SIGKILL to the postmaster; its pid once its parent has reaped it (the watch waits for that too)."""
    killed = _postmaster(pgdata)
    killed.kill()
    deadline = time.monotonic() + RECOVERED_WITHIN
    while psutil.pid_exists(killed.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(killed.pid), "no process reaped the killed postmaster"
    return killed.pid


def test_a_server_that_died_in_use_is_started_again_one_stopped_on_purpose_stays_stopped(server):
    server.global_process_id_list.put([os.getpid()])  # this test is the process using it
    killed = _kill_and_wait(server.pgdata)
    assert postmaster_died(server.pgdata)

    assert restart(server) is True
    assert not postmaster_died(server.pgdata)
    assert _postmaster(server.pgdata).pid != killed
    assert "(1 row)" in server.psql("SELECT 1;")

    server.stop()  # as the last client leaving stops it: its postmaster.pid goes with it
    assert not postmaster_died(server.pgdata)
    assert restart(server) is False
    assert _postmaster(server.pgdata) is None


def test_a_server_that_died_when_no_client_was_left_stays_down(server):
    server.global_process_id_list.put([_exited_pid()])  # a client killed without leaving
    _kill_and_wait(server.pgdata)

    assert restart(server) is False  # whoever joins next starts it
    assert postmaster_died(server.pgdata)
    assert _postmaster(server.pgdata) is None


def _exited_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.mark.slow
def test_a_killed_embedded_postgresql_is_started_again_and_the_application_answers(tmp_path):
    port = free_port()
    log = tmp_path / "run.log"
    pgdata = tmp_path / "data" / "pg"
    process = _make_run(port, log, tmp_path / "data")
    started = psutil.Process(process.pid)
    everything = [started]
    try:
        _wait_until_healthy(port, process, log)
        _wait_until_cluster_running(process, log)
        everything += started.children(recursive=True)
        assert _get(port, *PAGE)[0] == 200
        killed = _postmaster(pgdata)
        assert killed is not None, "make run's embedded PostgreSQL is not running"

        killed.kill()
        _wait_until_answering_again(port, process, log)
        restarted = _postmaster(pgdata)
        assert restarted is not None and restarted.pid != killed.pid
        # The application can answer a moment before the watch, which started the server, says so.
        said_by = time.monotonic() + 10
        while RESTARTED_LINE not in log.read_text() and time.monotonic() < said_by:
            time.sleep(0.1)
        assert RESTARTED_LINE in log.read_text()

        # Stopped on purpose with make run: every process of it exits, the server stops and stays stopped.
        everything += started.children(recursive=True)
        os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOPPED_WITHIN
        while (_alive(everything) or _postmaster(pgdata)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _alive(everything), (_alive(everything), log.read_text()[-3000:])
        assert _postmaster(pgdata) is None, log.read_text()[-3000:]
    finally:
        _kill(everything + _children(started))
        process.wait(timeout=30)
        _stop_left_over(pgdata)


def _make_run(port: int, log: Path, data: Path) -> subprocess.Popen:
    """scripts/run.sh with no DATABASE_URL: it starts its own PostgreSQL in ``data``/pg."""
    env = application_environment(port, DATABASE_URL="", KNOWLEDGE_DATA_DIR=str(data), WEB_WORKERS="1")
    with log.open("w") as out:
        return subprocess.Popen(
            ["bash", str(REPO_ROOT / "scripts" / "run.sh")],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,  # its own process group, as in a terminal
        )


def _wait_until_answering_again(port: int, process: subprocess.Popen, log: Path) -> None:
    down_at = time.monotonic()
    while not _answering_again(port) and time.monotonic() < down_at + RECOVERED_WITHIN:
        assert process.poll() is None, log.read_text()[-3000:]
        time.sleep(1)
    assert _answering_again(port), log.read_text()[-3000:]
    print(f"answering again {time.monotonic() - down_at:.1f} s after the kill")


def _wait_until_cluster_running(process: subprocess.Popen, log: Path) -> None:
    """Until the worker's cluster has started: the steady state, as in an application up for hours.

    A cluster still starting fails on the outage, and the cluster the supervisor starts in its
    place joins the embedded server (which starts it): that is not the case under test.
    """
    deadline = time.monotonic() + STARTED_WITHIN
    while not CLUSTER_RUNNING.search(log.read_text()) and time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-3000:]
        time.sleep(0.5)
    assert CLUSTER_RUNNING.search(log.read_text()), log.read_text()[-3000:]


def _stop_left_over(pgdata: Path) -> None:
    """A failed test must not leave its PostgreSQL running: a fast shutdown."""
    postmaster = _postmaster(pgdata)
    if postmaster is not None:
        postmaster.send_signal(signal.SIGINT)
        psutil.wait_procs([postmaster], timeout=30)
