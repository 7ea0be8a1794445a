"""What a client sees once it has failed to log in too often (django-axes calls lockout_response).

Each message says which limit refused it (accounts/login_limits.py), so each stays true: a lock
of the account at this address (a password reset clears it), a lock of the address (it does not),
or the account's slowdown (seconds, not minutes).
"""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render

from accounts.api.errors import error_body
from accounts.login_limits import address_locked, request_failures


def lockout_message(*, address_wide: bool) -> str:
    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    if address_wide:
        return f"Too many failed log-ins from your address; try again in {minutes} minutes."
    return (
        "Too many failed log-ins for this account from your address; "
        f"try again in {minutes} minutes (or reset your password)."
    )


def slowdown_message(seconds: int) -> str:
    return f"Too many failed log-ins for this account; try again in {seconds} seconds."


def lockout_response(request, original_response=None, credentials=None):
    """429 everywhere: the API's error body under /api/, a page on the log-in and admin forms."""
    slowdown = getattr(request, "login_slowdown_seconds", None)
    if slowdown:
        title, message, retry_after = "Log-in paused", slowdown_message(slowdown), slowdown
    else:
        title, message = "Log-in locked", lockout_message(address_wide=_address_locked(request))
        retry_after = int(settings.AXES_COOLOFF_TIME.total_seconds())
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body(429, "throttled", message), status=429)
    else:
        context = {"title": title, "message": message}
        response = render(request, "accounts/locked_out.html", context, status=429)
    response["Retry-After"] = str(retry_after)
    return response


def _address_locked(request) -> bool:
    """Whether the address itself is locked (else it is the account at this address)."""
    return address_locked(request_failures(request, getattr(request, "axes_credentials", None)))
