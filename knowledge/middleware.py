"""Request guards that run before any view."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render

from accounts.api.errors import error_body
from config.base.validation import unstorable_location

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class RejectNulMiddleware:
    """A NUL character (or a lone surrogate) anywhere in a page request (path, query, cookies, form
    fields, file names) is a 400.

    PostgreSQL cannot store or even compare text holding either, so such input
    would otherwise surface as a server error wherever it reaches a query.
    API bodies are checked by the API itself after parsing (accounts.api.base),
    so that its own error format and size limits apply; their path, query and
    cookies are checked here.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        in_cookies = unstorable_location(dict(request.COOKIES), name="cookie")
        if in_cookies:
            # The session cannot be loaded with such a cookie: answer without touching it.
            return HttpResponse(f"Bad request: a cookie {in_cookies[1]}.", status=400)
        found = self._location(request)
        if found:
            where, problem = found
            return self._refusal(request, f"{where} {problem}")
        return self.get_response(request)

    def _location(self, request) -> tuple[str, str] | None:
        found = unstorable_location(request.path, name="the address") or unstorable_location(
            request.GET, name="query"
        )
        if found or _is_api(request) or not request.content_type.startswith(FORM_TYPES):
            return found
        return unstorable_location(request.POST, name="form") or unstorable_location(
            request.FILES, name="upload"
        )

    def _refusal(self, request, message: str):
        if _is_api(request):
            return JsonResponse(error_body(400, "invalid", message), status=400)
        accept = request.headers.get("Accept", "")
        if "application/json" in accept or "text/event-stream" in accept:
            return JsonResponse({"error": message}, status=400)
        return render(request, "knowledge/error.html", {"message": f"Bad request: {message}."}, status=400)


def _is_api(request) -> bool:
    return request.path.startswith("/api/")
