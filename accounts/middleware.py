"""Sets the audit context (accounts.audit) for every page, API and admin request, holds an
operator on the default password at the password change form (accounts/policy.py), and an account
that MFA_REQUIRED covers at the MFA pages until it has a second factor (accounts/mfa.py)."""

from __future__ import annotations

from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import redirect

from accounts.api.errors import error_body
from accounts.audit import audit_context
from accounts.models import AuditEvent
from accounts.policy import ALWAYS_REACHABLE, account_hold

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
    if path.startswith("/scim/"):
        return AuditEvent.Channel.SCIM
    return AuditEvent.Channel.PAGE


class AccountPolicyMiddleware:
    """An account held at a set-up page (accounts.policy.account_hold: an operator still on the
    default password, then an account MFA_REQUIRED covers without a second factor) reaches only that
    page and log-out. Pages redirect there, the API answers 403 saying so."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # The path first: the health check and static files never load the session's user.
        if request.path.startswith(ALWAYS_REACHABLE) or not request.user.is_authenticated:
            return self.get_response(request)
        hold = account_hold(request.user)
        if hold is None or request.path.startswith(hold.reachable):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse(error_body(403, "permission_denied", hold.message), status=403)
        messages.warning(request, hold.notice)
        return redirect(hold.page)
