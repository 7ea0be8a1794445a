"""Django's PostgreSQL backend, with a query log that shows server-bound statements, and a pool
that tells a busy pool from an unreachable database.

One timeout cannot serve both waits. While the database is unreachable a request
must fail within seconds (DB_CONNECT_TIMEOUT, then a 503). But under a burst every
pooled connection can be busy serving other requests for longer than that, and a
request that waits its turn is no outage (200 clients on two cores: 656 of 5,667
requests answered 503 with one short timeout). So a request first waits the short
timeout; if by then every connection the pool may open is open and in use, it
waits its turn for up to DB_POOL_BUSY_TIMEOUT more.
"""

from __future__ import annotations

from django.db.backends.postgresql import base, operations
from psycopg import errors
from psycopg_pool import PoolTimeout

BUSY_TIMEOUT_KEY = "POOL_BUSY_TIMEOUT"  # in the DATABASES entry (config.base.database), seconds


class BusyAwarePool:
    """A psycopg_pool.ConnectionPool whose getconn waits longer only while the pool is busy."""

    def __init__(self, pool, busy_timeout: float) -> None:
        self._pool = pool
        self._busy_timeout = busy_timeout

    def getconn(self, timeout: float | None = None):
        try:
            return self._pool.getconn(timeout)
        except PoolTimeout:
            if not self.busy():
                raise  # connections could be opened, yet none came: the database is unreachable
            return self._pool.getconn(self._busy_timeout)

    def busy(self) -> bool:
        """Every connection the pool may open is open and in use by a request.

        The pool's size counts a connection it is still trying to open (one at a time,
        ``_growing``): against an unreachable server that attempt is no busy connection.
        """
        stats = self._pool.get_stats()
        opening = 1 if getattr(self._pool, "_growing", False) else 0
        return stats["pool_size"] - opening >= stats["pool_max"] and stats["pool_available"] == 0

    def __getattr__(self, name):
        return getattr(self._pool, name)


class DatabaseOperations(operations.DatabaseOperations):
    def last_executed_query(self, cursor, sql, params):
        """The SQL as run, for the query log, also for a statement bound on the server.

        Django reads it from the client-bound text, which a server-bound cursor
        (config.base.prepared.planned_once_cursor) does not keep once its statement
        is prepared; composed the way Django composes it when every cursor binds on the server.
        """
        if isinstance(cursor, base.ServerBindingCursor):
            try:
                return self.compose_sql(sql, params)
            except errors.DataError:
                return None
        return super().last_executed_query(cursor, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    @property
    def pool(self):
        pool = super().pool
        if pool is None:
            return None
        return BusyAwarePool(pool, self.settings_dict.get(BUSY_TIMEOUT_KEY, 30))
