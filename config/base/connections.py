"""Giving this thread's database connections back before it waits on something slow.

A request holds its pooled connection from its first query to its end. A request that then waits on
the network (an LLM's answer, a site a user named, a host name's lookup) would keep the connection
all that time: a few dozen such waits take every connection of a process's pool, and every other
request waits for one until it answers 503 with the database up. So such code gives its connections
back first and takes one again, from the pool, only when it next runs a query.
"""

from __future__ import annotations

from django.db import connections


def release_connections() -> None:
    """Hand this thread's database connections back (to the pool, or closed), except one inside a
    transaction: closing it would end the transaction, whose work is not done."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()
