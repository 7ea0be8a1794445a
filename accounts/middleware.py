"""Sets the audit context (accounts.audit) for every page, API and admin request."""

from __future__ import annotations

from accounts.audit import audit_context
from accounts.models import AuditEvent

ADMIN_PREFIX = "/admin/"  # config.urls mounts the admin here


class AuditContextMiddleware:
    """Names the request's channel and holds the request, so an event recorded during it knows the
    actor and address. Costs no query: both are read only when an event is recorded."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with audit_context(channel=request_channel(request.path), request=request):
            return self.get_response(request)


def request_channel(path: str) -> str:
    if path.startswith("/api/"):
        return AuditEvent.Channel.API
    if path.startswith(ADMIN_PREFIX):
        return AuditEvent.Channel.ADMIN
    return AuditEvent.Channel.PAGE
