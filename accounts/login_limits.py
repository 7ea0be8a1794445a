"""Failed log-ins: what locks, what slows down, and why a username alone never locks.

django-axes counts failures in the database (rows per username and address, kept for the
cool-off, LOGIN_LOCKOUT_MINUTES, after their last failure). This handler reads them so:

    pair      LOGIN_FAILURE_LIMIT failures for one username from one address lock that username
              at that address: guessing one account from one place stops there.
    address   LOGIN_ADDRESS_FAILURE_LIMIT failures from one address, whatever the usernames, lock
              the address for every username: one place spraying a password over many accounts
              stops there.
    slowdown  once a username has LOGIN_SLOWDOWN_AFTER failures from all addresses together, the
              addresses that have failed for it share one checked try per interval; the interval
              doubles with each further failure (1 s, 2 s, 4 s ...) up to LOGIN_SLOWDOWN_MAX_SECONDS.
              A try over that rate is answered 429 with the wait, unchecked and uncounted.

A username is never locked by itself: a lock of the account from anywhere let anyone lock its
owner out with a few wrong passwords from a few addresses. Against many addresses guessing one
account, the slowdown caps the tries of the addresses already seen failing, while an address
with no failure for the account (the owner's, usually) is checked at once: the owner logs in
without waiting, and each new address of the attacker's gets one try, where the pair limit alone
would give it LOGIN_FAILURE_LIMIT. The slowdown's try is claimed in one statement
(accounts/rate_limits.py), so parallel requests at the end of a wait get one try between them,
not one each.

A lock-out refuses the right password too and counts every refused try (django-axes'
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT), so it lasts the cool-off after the last try.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Q, Sum

from accounts.rate_limits import rate_count

# Doubling past this many steps already exceeds any sensible cap (2**20 s is 12 days).
_MAX_DOUBLINGS = 20


@dataclass(frozen=True)
class Failures:
    """The counts one log-in attempt is judged by (failures younger than the cool-off)."""

    pair: int  # this username from this address
    address: int  # this address, any username
    username: int  # this username, every address


def login_failures(*, username: str | None, address: str | None, since: datetime) -> Failures:
    """One query over the rows of this address or of this username whose last failure is ``since``
    or later (the start of the cool-off)."""
    rows = AccessAttempt.objects.filter(attempt_time__gte=since)
    # The aliases differ from the column names: an aggregate's alias would shadow its column.
    counts = rows.filter(Q(ip_address=address) | Q(username=username)).aggregate(
        pair_failures=Sum("failures_since_start", filter=Q(ip_address=address, username=username)),
        address_failures=Sum("failures_since_start", filter=Q(ip_address=address)),
        username_failures=Sum("failures_since_start", filter=Q(username=username)),
    )
    return Failures(
        pair=counts["pair_failures"] or 0,
        address=counts["address_failures"] or 0,
        username=counts["username_failures"] or 0,
    )


def request_failures(request, credentials: dict | None = None) -> Failures:
    """The counts for the username and address of a request django-axes has seen."""
    return login_failures(
        username=get_client_username(request, credentials),
        address=request.axes_ip_address,
        since=get_cool_off_threshold(request),
    )


def pair_locked(failures: Failures) -> bool:
    return failures.pair >= settings.AXES_FAILURE_LIMIT


def address_locked(failures: Failures) -> bool:
    return failures.address >= settings.LOGIN_ADDRESS_FAILURE_LIMIT


def slowdown_interval(username_failures: int) -> int:
    """Seconds per checked try for the addresses that failed for an account; 0: no slowdown."""
    over = username_failures - settings.LOGIN_SLOWDOWN_AFTER
    if over < 0 or settings.LOGIN_SLOWDOWN_MAX_SECONDS == 0:
        return 0
    return min(2 ** min(over, _MAX_DOUBLINGS), settings.LOGIN_SLOWDOWN_MAX_SECONDS)


def slowdown_claim(*, username: str | None, failures: Failures, now: float | None = None) -> float:
    """Take this try's turn under the account's slowdown: 0 if it may be checked now (the turn is
    then used), else the seconds to wait. ``now`` (Unix time) is the clock, for tests."""
    interval = slowdown_interval(failures.username)
    if not interval or not failures.pair:
        return 0.0  # not slowed down, or no failure from here for this account: the owner's address
    # One key per interval: a longer interval starts a count of its own, never one mixing periods.
    key = f"login_slowdown_{interval}_{hashlib.sha256((username or '').encode()).hexdigest()}"
    allowed, wait = rate_count(key=key, limit=1, period=interval, now=now)
    return 0.0 if allowed else wait


class LoginLimitsHandler(AxesDatabaseHandler):
    """django-axes' database handler, judging its rows by the pair and address limits and the
    account's slowdown above (axes alone compares every count with one limit)."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        """Failures as django-axes compares them with AXES_FAILURE_LIMIT: the limit less the tries
        left before the nearer of the two locks, so it is reached exactly when one of them is."""
        found = request_failures(request, credentials)
        left = min(
            settings.AXES_FAILURE_LIMIT - found.pair, settings.LOGIN_ADDRESS_FAILURE_LIMIT - found.address
        )
        return settings.AXES_FAILURE_LIMIT - left

    def is_locked(self, request, credentials: dict | None = None) -> bool:
        """Locked, or slowed down (the wait is left on the request for the 429). Called once per
        password check, by django-axes' authentication backend: a try let through uses its turn."""
        found = request_failures(request, credentials)
        if pair_locked(found) or address_locked(found):
            return True
        wait = slowdown_claim(username=get_client_username(request, credentials), failures=found)
        if wait > 0:
            request.login_slowdown_seconds = math.ceil(wait)
            return True
        return False

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        """A try refused by the slowdown was never checked: it is answered 429 and not counted, so
        hammering during the wait neither locks the address nor lengthens the account's interval."""
        if request is not None and getattr(request, "login_slowdown_seconds", None):
            request.axes_locked_out = True
            request.axes_credentials = credentials
            return
        super().user_login_failed(sender, credentials, request=request, **kwargs)
