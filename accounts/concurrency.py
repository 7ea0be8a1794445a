"""Work a user may run only a few of at once, counted across every server process.

A rate limit counts what was started in a period; it cannot stop work that lasts: a source's preview
waits on a site its user chose, and a user within their write allowance could start dozens that each
wait for as long as the site drips. Here each run holds one of ``limit`` numbered slots: a row
(key, number) in the database, taken by one statement that only succeeds on a slot free or expired,
and deleted when the work ends, however it ends.

The slot is a row, not a lock held on a connection: the work runs without a database connection (it
waits on the network). A process that dies while it holds one leaves the row behind; the row expires
``EXPIRY_MARGIN`` seconds after the longest the work may take, and the next taker has it.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Iterator

from django.db import connection
from django.db.models import Min
from django.utils import timezone

from accounts.models import ConcurrencySlot
from config.base.errors import RateLimitedError

# Seconds a slot outlives the longest its work may take: for what the work's own deadline does not
# cover (a host name's lookup has only the system resolver's timeout). Past it the slot is free even if
# its work still runs, so a stuck process never blocks its user for good.
EXPIRY_MARGIN = 60

# The lowest slot number that is free (or expired) now, taken; no row when none is. Two requests that
# pick the same number race on the unique (key, number): the loser's conflict finds the slot live and
# returns no row, and tries again (``concurrency_slot_take``).
_TAKE = """
WITH free AS (
    SELECT n FROM generate_series(0, %(limit)s - 1) AS n
    WHERE NOT EXISTS (
        SELECT 1 FROM accounts_concurrencyslot s
        WHERE s.key = %(key)s AND s.number = n AND s.expires_at > now()
    )
    ORDER BY n LIMIT 1
)
INSERT INTO accounts_concurrencyslot AS s (key, number, holder, expires_at)
SELECT %(key)s, n, %(holder)s, now() + make_interval(secs => %(seconds)s) FROM free
ON CONFLICT (key, number) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
    WHERE s.expires_at <= now()
RETURNING number
"""


@contextlib.contextmanager
def concurrency_slot(*, key: str, limit: int, seconds: float, what: str) -> Iterator[None]:
    """Run the block in one of ``limit`` slots of ``key`` (the block takes at most ``seconds``);
    RateLimitedError (429) while all are held: "at most 2 previews at once"."""
    holder = uuid.uuid4()
    number = concurrency_slot_take(key=key, limit=limit, seconds=seconds + EXPIRY_MARGIN, holder=holder)
    if number is None:
        wait = _seconds_until_one_is_free(key)
        raise RateLimitedError(
            f"at most {limit} {what} at once; try again in {math.ceil(wait)} seconds, when one has ended",
            retry_after=wait,
        )
    try:
        yield
    finally:
        ConcurrencySlot.objects.filter(key=key, number=number, holder=holder).delete()


def concurrency_slot_take(*, key: str, limit: int, seconds: float, holder: uuid.UUID) -> int | None:
    """The number of the slot taken for ``holder`` until ``seconds`` from now, or None when all
    ``limit`` are held."""
    parameters = {"key": key, "limit": limit, "holder": holder, "seconds": seconds}
    with connection.cursor() as cursor:
        for _ in range(limit):  # a lost race on a free slot tries the next one
            cursor.execute(_TAKE, parameters)
            row = cursor.fetchone()
            if row is not None:
                return row[0]
            if not _any_free(cursor, key, limit):
                return None
    return None


def _any_free(cursor, key: str, limit: int) -> bool:
    cursor.execute(
        "SELECT count(*) FROM accounts_concurrencyslot WHERE key = %s AND number < %s AND expires_at > now()",
        [key, limit],
    )
    return cursor.fetchone()[0] < limit


def _seconds_until_one_is_free(key: str) -> float:
    """At the latest, when the oldest slot's work reaches its own deadline (its expiry less the margin)."""
    live = ConcurrencySlot.objects.filter(key=key, expires_at__gt=timezone.now())
    first = live.aggregate(first=Min("expires_at"))["first"]
    if first is None:
        return 1.0
    return max(1.0, (first - timezone.now()).total_seconds() - EXPIRY_MARGIN)


def concurrency_slots_prune() -> int:
    """Forget the slots left behind by processes that died holding them."""
    deleted, _ = ConcurrencySlot.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted
