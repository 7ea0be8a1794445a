"""What a client sees once it has failed to log in too often (django-axes calls lockout_response)."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render

from accounts.api.errors import error_body


def lockout_message() -> str:
    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    return (
        "Too many failed log-ins for this account or from your address; "
        f"try again in {minutes} minutes (or reset your password)."
    )


def lockout_response(request, original_response=None, credentials=None):
    """429 everywhere: the API's error body under /api/, a page on the log-in and admin forms."""
    message = lockout_message()
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body(429, "throttled", message), status=429)
    else:
        response = render(request, "accounts/locked_out.html", {"message": message}, status=429)
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response
