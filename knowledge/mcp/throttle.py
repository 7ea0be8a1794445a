"""The REST API's rate limits for MCP tool calls, counted together with the user's API requests."""

from __future__ import annotations

from types import SimpleNamespace

from rest_framework.exceptions import Throttled

from accounts.api.base import ScopedThrottle


def throttle_check(*, user, scope: str | None) -> None:
    """Throttled (429, the API's message) when ``user`` is over the API's rate for ``scope``.

    The same throttle class, rate setting and cache key as the API views: a
    client cannot get round the API's limit by switching to MCP.
    """
    if scope is None:
        return
    throttle = ScopedThrottle()
    # What the throttle reads from a request and a view: the user (for the key) and the scope.
    if not throttle.allow_request(SimpleNamespace(user=user, META={}), SimpleNamespace(throttle_scope=scope)):
        raise Throttled(wait=throttle.wait())
