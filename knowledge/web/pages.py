"""What every page shares: the login-and-errors wrapper, form id parsing and the error pages."""

from __future__ import annotations

import functools
import sys

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from accounts.api.errors import error_body
from config.base.errors import (
    DATABASE_UNAVAILABLE,
    KnowledgeError,
    NotFoundError,
    RateLimitedError,
    database_retry_after_header,
    database_unavailable,
)
from config.base.validation import id_or_none

# The collection a user just subscribed to: their next chat preselects it (knowledge.web.chat).
CHAT_PRESELECT_KEY = "chat_preselect_collection"


def knowledge_page(view):
    """Login required; unknown or unreadable objects are a 404, refused actions a clear message."""

    @login_required
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except NotFoundError as exc:
            if wants_json(request):  # the page's scripts show the message, as the API gives it
                return JsonResponse({"error": str(exc)}, status=exc.status_code)
            raise Http404(str(exc)) from exc
        except KnowledgeError as exc:
            return _refused(request, exc)

    return wrapper


def _refused(request, exc: KnowledgeError) -> HttpResponse:
    if wants_json(request):
        response = JsonResponse({"error": str(exc)}, status=exc.status_code)
    else:
        response = render(request, "knowledge/error.html", {"message": str(exc)}, status=exc.status_code)
    if isinstance(exc, RateLimitedError):
        response["Retry-After"] = exc.retry_after_header
    return response


def wants_json(request) -> bool:
    """Scripts (fetch, the chat's event stream) read errors as JSON; browsers navigating get the HTML page."""
    accept = request.headers.get("Accept", "")
    return "application/json" in accept or "text/event-stream" in accept


def form_ids(values, *, field: str) -> list[int]:
    """Ids from a form's repeated field; anything but a positive bigint is bad input (never dropped)."""
    ids = [id_or_none(raw) for raw in values]
    if None in ids:
        raise KnowledgeError(f"{field} must be ids (positive whole numbers)")
    return ids


def error_404(request, exception=None):
    return render(request, "knowledge/error.html", {"message": "Not found."}, status=404)


def error_500(request):
    """Django calls this inside its ``except``: an unreachable database is a 503, anything else a 500.

    No template: rendering one may need the database (the user, the session).
    """
    if database_unavailable(sys.exc_info()[1]):
        return _database_unavailable(request)
    return HttpResponse(
        "<h1>Something went wrong</h1><p>The error was logged. Please try again.</p>", status=500
    )


def _database_unavailable(request) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body(503, "unavailable", DATABASE_UNAVAILABLE), status=503)
    else:
        response = HttpResponse(f"<h1>Service unavailable</h1><p>{DATABASE_UNAVAILABLE}.</p>", status=503)
    response["Retry-After"] = database_retry_after_header()
    return response


def collection_settings_redirect(collection_id: int, *, section: str = "collection-settings"):
    """Back to the collection page at the section where the change was made (settings, by default):
    the page opens the folded section its address names."""
    return redirect(reverse("knowledge:collection", kwargs={"collection_id": collection_id}) + "#" + section)
