"""Request rates every path shares: the pages, the API, MCP tools and the admin count together.

The rates are REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] (config/api_settings.py, one
environment variable each). A user's count has the key DRF's scoped throttle gives it
(``throttle_<scope>_<user id>``), so API views throttled by scope and the callers here add
to the same count: switching from the API to the pages or MCP resets nothing.

Scopes counted here:

    uploads   each uploaded file (a request of 100 files counts 100)
    writes    each collection or profile created, each re-index or retry of a document or collection,
              each subscribe and unsubscribe (each change writes an audit record kept for good)
    retrieve  each question asked and each search (the API's retrieve and query, MCP reads, the chat
              page and the collection page's search)
    syncs     each sync of a source, counted for the collection's owner: "Sync now" on the pages and
              the API, the first sync of a source added, and the syncs its schedule starts
    signup    each sign-up, per client address
    password_reset  each reset e-mail asked for, per client address and per account
"""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from accounts.rate_limits import rate_count
from config.base.errors import KnowledgeError, RateLimitedError

_WHAT = {
    "uploads": "files uploaded",
    "writes": "collections and profiles created, re-indexes, retries and subscription changes",
    "retrieve": "questions and searches",
    "syncs": "source syncs (of the collection owner's sources, scheduled ones included)",
    "signup": "sign-ups from your address",
    "password_reset": "password reset e-mails",
}


def throttle_charge(*, scope: str, ident, amount: int = 1) -> None:
    """Count ``amount`` for ``ident`` under ``scope``; RateLimitedError (429) when over its rate."""
    limit, period = throttle_rate(scope)
    if amount > limit:
        raise KnowledgeError(
            f"at most {limit} {_WHAT.get(scope, 'requests')} per {_period_name(period)}; send fewer at once"
        )
    allowed, wait = rate_count(key=f"throttle_{scope}_{ident}", limit=limit, period=period, amount=amount)
    if not allowed:
        raise RateLimitedError(
            f"too many {_WHAT.get(scope, 'requests')}: at most {limit} per {_period_name(period)}; "
            f"try again in {round(wait)} seconds",
            retry_after=wait,
        )


def user_throttle_charge(*, user, scope: str, amount: int = 1) -> None:
    """``throttle_charge`` for a signed-in user, with the API throttle's key for them."""
    throttle_charge(scope=scope, ident=user.pk, amount=amount)


def throttle_rate(scope: str) -> tuple[int, int]:
    """(requests, seconds) of ``scope``, read at call time so tests and settings changes apply."""
    return SimpleRateThrottle.parse_rate(None, api_settings.DEFAULT_THROTTLE_RATES[scope])


def throttle_rate_words(scope: str) -> str:
    """The rate of ``scope`` as a person reads it: "60 per hour"."""
    limit, period = throttle_rate(scope)
    return f"{limit} per {_period_name(period)}"


def _period_name(seconds: int) -> str:
    return {1: "second", 60: "minute", 3600: "hour", 86400: "day"}[seconds]
