"""Sets the audit context (accounts.audit) for every page, API and admin request, holds an
operator on the default password at the password change form (accounts/policy.py), and an account
that MFA_REQUIRED covers at the MFA pages until it has a second factor (accounts/mfa.py)."""

from __future__ import annotations

from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import redirect

from accounts.api.errors import error_body
from accounts.audit import audit_context
from accounts.mfa import MFA_REQUIRED_MESSAGE, mfa_setup_pending
from accounts.models import AuditEvent
from accounts.policy import DEFAULT_PASSWORD_MESSAGE, must_change_password

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


# What an account that must change its password may still reach (prefixes of the path).
_PASSWORD_CHANGE_EXEMPT = ("/accounts/password/change/", "/accounts/logout/", "/static/", "/healthz")


# What an account that must add a second factor may still reach: the MFA pages, the password
# re-authentication they may ask for first, and log-out.
_MFA_SETUP_EXEMPT = (
    "/accounts/2fa/",
    "/accounts/reauthenticate/",
    "/accounts/logout/",
    "/static/",
    "/healthz",
)


class AccountPolicyMiddleware:
    """An operator still on the default password reaches only the password change form (and log-out);
    then an account MFA_REQUIRED covers, without a second factor, reaches only the MFA pages (and
    log-out). Pages redirect there, the API answers 403 saying so."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # The path first: the health check and static files never load the session's user.
        if (
            not request.path.startswith(_PASSWORD_CHANGE_EXEMPT)
            and request.user.is_authenticated
            and must_change_password(request.user)
        ):
            return _password_change_required(request)
        if (
            not request.path.startswith(_MFA_SETUP_EXEMPT)
            and request.user.is_authenticated
            and mfa_setup_pending(request.user)
        ):
            return _mfa_setup_required(request)
        return self.get_response(request)


def _mfa_setup_required(request):
    if request.path.startswith("/api/"):
        return JsonResponse(error_body(403, "permission_denied", MFA_REQUIRED_MESSAGE), status=403)
    messages.warning(request, "Add a second factor (an authenticator app or a passkey) to use this site.")
    return redirect("mfa_index")


def _password_change_required(request):
    if request.path.startswith("/api/"):
        return JsonResponse(error_body(403, "permission_denied", DEFAULT_PASSWORD_MESSAGE), status=403)
    messages.warning(request, "Choose a new password: the default one is known to everyone.")
    return redirect("accounts:password_change")
