"""The client's network address, for log-in limits and request throttles.

Headers such as X-Forwarded-For are written by whoever sends the request, so
they are believed only as far as the operator says proxies of their own
append to them (TRUSTED_PROXY_COUNT); otherwise the socket's address counts.
"""

from __future__ import annotations

from django.conf import settings


def client_address(request) -> str:
    """REMOTE_ADDR, or the address the outermost of TRUSTED_PROXY_COUNT proxies saw.

    The same rule as Django REST framework's NUM_PROXIES (set from the same
    setting), so the log-in limiter and the API throttles agree on who a client is.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if not proxies or not forwarded:
        return remote
    addresses = forwarded.split(",")
    return addresses[-min(proxies, len(addresses))].strip()
