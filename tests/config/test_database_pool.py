"""The pool waits its turn while every connection is busy, and fails fast while the server is unreachable."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from psycopg_pool import ConnectionPool, PoolTimeout

from config.base.postgresql.base import BusyAwarePool
from tests.served import free_port

SHORT = 0.5  # the pool's own timeout: DB_CONNECT_TIMEOUT
BUSY = 10.0  # DB_POOL_BUSY_TIMEOUT


def _pool(conninfo: str) -> BusyAwarePool:
    pool = ConnectionPool(conninfo, min_size=0, max_size=1, timeout=SHORT, open=False)
    pool.open(wait=False)
    return BusyAwarePool(pool, BUSY)


@pytest.mark.django_db
def test_a_request_waits_its_turn_while_every_connection_is_busy():
    connection.ensure_connection()
    pool = _pool(connection.connection.info.dsn)  # the test database, as this process reaches it
    try:
        held = pool.getconn()
        threading.Timer(2 * SHORT + 0.5, pool.putconn, args=(held,)).start()
        started = time.monotonic()
        waited = pool.getconn()  # past the short timeout: the one connection is busy, not gone
        assert time.monotonic() - started > 2 * SHORT
        pool.putconn(waited)
    finally:
        pool.close()


def test_an_unreachable_server_fails_within_the_short_timeout():
    pool = _pool(f"host=127.0.0.1 port={free_port()} dbname=none user=none connect_timeout=1")
    try:
        started = time.monotonic()
        with pytest.raises(PoolTimeout):
            pool.getconn()
        assert time.monotonic() - started < BUSY / 2  # not the busy wait
    finally:
        pool.close()
