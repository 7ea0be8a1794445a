"""Request rate limits counted in one statement: a sliding window over two fixed periods.

DRF's cache throttle keeps every request's time in a list that it reads,
unpickles, trims, pickles and writes back on every request; on the database
cache that is a transaction of five statements plus a COUNT(*) of the cache
table, and the list grows with the rate. Here one INSERT ... ON CONFLICT
updates a row of counts and says whether the request is allowed. The estimate
is the usual sliding-window one: the previous period's count weighted by how
much of it still lies within one period of now, plus the current count.
Refused requests are not counted (as with DRF), so a client is let in again
as soon as its rate falls under the limit.
"""

from __future__ import annotations

import datetime
import math
import time

from django.utils import timezone

from accounts.models import RateCounter
from config.base.prepared import planned_once_cursor

_COUNT = """
INSERT INTO accounts_ratecounter AS r (key, window_index, current, previous, allowed, touched_at)
VALUES (
    %(key)s, %(window)s, CASE WHEN %(amount)s <= %(limit)s THEN %(amount)s ELSE 0 END, 0,
    %(amount)s <= %(limit)s, now()
)
ON CONFLICT (key) DO UPDATE SET
    window_index = EXCLUDED.window_index,
    touched_at = EXCLUDED.touched_at,
    previous = {previous},
    current = {current} + CASE WHEN {estimate} + %(amount)s <= %(limit)s THEN %(amount)s ELSE 0 END,
    allowed = {estimate} + %(amount)s <= %(limit)s
RETURNING allowed, current
"""
_CURRENT = "(CASE WHEN r.window_index = EXCLUDED.window_index THEN r.current ELSE 0 END)"
_PREVIOUS = (
    "(CASE WHEN r.window_index = EXCLUDED.window_index THEN r.previous"
    " WHEN r.window_index = EXCLUDED.window_index - 1 THEN r.current ELSE 0 END)"
)
_ESTIMATE = f"({_PREVIOUS} * %(weight)s + {_CURRENT})"
COUNT_SQL = _COUNT.format(previous=_PREVIOUS, current=_CURRENT, estimate=_ESTIMATE)


def rate_count(
    *, key: str, limit: int, period: int, now: float | None = None, amount: int = 1
) -> tuple[bool, float]:
    """Count ``amount`` requests (or files) for ``key`` if they fit within ``limit`` per ``period`` seconds.

    Returns (allowed, seconds to wait when refused).
    """
    now = time.time() if now is None else now
    window = math.floor(now / period)
    elapsed = now / period - window  # fraction of the current period gone
    weight = 1.0 - elapsed
    with planned_once_cursor() as cursor:
        cursor.execute(
            COUNT_SQL, {"key": key, "window": window, "limit": limit, "weight": weight, "amount": amount}
        )
        allowed, current = cursor.fetchone()
    if allowed:
        return True, 0.0
    # Refused. The estimate falls under the limit once enough of this period's count has
    # slid out: at the end of this period, plus the share of the next one it takes.
    remaining = (1.0 - elapsed) * period
    if current and current > limit - amount:
        remaining += period * (1.0 - max(0, limit - amount) / current)
    return False, max(1.0, round(remaining, 1))


def rate_counters_prune(*, older_than: datetime.timedelta = datetime.timedelta(days=1)) -> int:
    """Forget the counts of clients silent for longer than any period (the longest is a day)."""
    deleted, _ = RateCounter.objects.filter(touched_at__lt=timezone.now() - older_than).delete()
    return deleted
