"""What every page shares: the login-and-errors wrapper, form id parsing and the error pages."""

from __future__ import annotations

import functools

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render

from config.errors import KnowledgeError, NotFoundError
from config.validation import id_or_none


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
            if wants_json(request):
                return JsonResponse({"error": str(exc)}, status=exc.status_code)
            return render(request, "knowledge/error.html", {"message": str(exc)}, status=exc.status_code)

    return wrapper


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
    return HttpResponse(
        "<h1>Something went wrong</h1><p>The error was logged. Please try again.</p>", status=500
    )
