"""allauth's adapters: our rules for who signs in through an identity provider, and how.

* A new provider user gets an account only when just-in-time accounts are on (SSO_JIT, or the
  provider's own "jit").
* An existing account is reached only through its link (SocialAccount), or by e-mail under
  accounts/sso/linking.py's rules; a new user whose address belongs to an account that may not be
  linked is refused, rather than given a second account with the same address.
* A provider's preferred_username is only a suggestion for a new account's name: allauth makes it
  unique, so it never names an existing account.
* Every refusal and every sign-in is audited (sso.*).
* allauth's own failed-password limit (per username alone) is off: django-axes and
  accounts/login_limits.py are the one limit on password guessing.
"""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.mfa.webauthn.internal.flows import did_use_passwordless_login
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect

from accounts.audit import AuditSubject, audit_record
from accounts.sso.linking import accounts_with_email, link_refusal


class AccountAdapter(DefaultAccountAdapter):
    def pre_authenticate(self, request, **credentials):
        """No allauth limit: it locks a username from everywhere, which lets anyone lock its owner out."""

    def is_open_for_signup(self, request):
        return settings.LOCAL_LOGIN_ENABLED

    def pre_login(self, request, user, **kwargs):
        """A passkey sign-in is a local sign-in: while local log-in is off, only the break-glass
        accounts may (as with a password, accounts/backends.py)."""
        from accounts.backends import local_login_allowed  # imports the directory's backend

        if did_use_passwordless_login(request, user) and not local_login_allowed(user):
            audit_record(
                action="auth.local_login_refused",
                obj=user,
                changes={"reason": [None, "local log-in is off"], "method": [None, "passkey"]},
            )
            messages.error(request, "Passkey sign-in is off: sign in with your organisation's provider.")
            return redirect("accounts:login")
        return super().pre_login(request, user, **kwargs)

    def respond_user_inactive(self, request, user):
        """A deactivated account's sign-in through a provider: refused (allauth's page) and recorded."""
        audit_record(
            action="sso.login_refused", obj=user, changes={"reason": [None, "the account is inactive"]}
        )
        return super().respond_user_inactive(request, user)


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_auto_signup_allowed(self, request, sociallogin):
        """Always: our rules ran in pre_social_login, and allauth's signup form would let a provider's
        user pick a username or address by hand."""
        return True

    def is_open_for_signup(self, request, sociallogin):
        if provider_setting(sociallogin.provider.app, "jit", settings.SSO_JIT):
            return True
        refuse(request, sociallogin.provider, "just-in-time accounts are off", uid=sociallogin.account.uid)

    def authenticate_by_email(self, sociallogin):
        for address in sociallogin.email_addresses:
            users = accounts_with_email(address.email)
            if users and not link_refusal(
                app_settings=sociallogin.provider.app.settings, address=address, users=users
            ):
                return users[0], address.email
        return None

    def pre_social_login(self, request, sociallogin):
        if sociallogin.is_existing:
            if getattr(sociallogin, "_did_authenticate_by_email", None):
                _record(sociallogin, "sso.account_linked", sociallogin.user)
            return
        for address in sociallogin.email_addresses:
            users = accounts_with_email(address.email)
            if users:
                reason = link_refusal(
                    app_settings=sociallogin.provider.app.settings, address=address, users=users
                )
                refuse(
                    request,
                    sociallogin.provider,
                    f"link refused: {reason}",
                    uid=sociallogin.account.uid,
                    shown="an account with your e-mail address exists already",
                )

    def on_authentication_error(self, request, provider, error=None, exception=None, extra_context=None):
        reason = getattr(exception, "reason", None) or _error_reason(error, exception, extra_context)
        detail = (extra_context or {}).get("detail") or str(exception or error or "")
        audit_record(
            action="sso.login_refused",
            obj=AuditSubject(object_type="socialaccount.socialapp", object_repr=provider.sub_id),
            changes={"reason": [None, reason], "detail": [None, detail[:500]]},
        )


def _error_reason(error, exception, extra_context) -> str:
    if extra_context and extra_context.get("reason"):
        return extra_context["reason"]  # the SAML response view's (accounts/sso/saml/checks.py)
    if exception is not None:
        return type(exception).__name__
    if extra_context and "state_id" in extra_context:
        return "state"  # no state of this session matches the callback's
    return str(error or "unknown")


def provider_setting(app, key: str, default):
    value = (app.settings or {}).get(key) if app is not None else None
    return default if value is None else value


def refuse(request, provider, reason: str, *, uid: str = "", shown: str = ""):
    """Ends the sign-in on the log-in page with a message (``shown``, else the reason), and records
    the reason: a link refusal's details (staff, a password) are for the audit log, not the visitor."""
    audit_record(
        action="sso.login_refused",
        obj=AuditSubject(object_type="socialaccount.socialapp", object_repr=provider.sub_id),
        changes={"reason": [None, reason], "uid": [None, uid]},
    )
    messages.error(
        request,
        f"Signing in with {provider.name} was refused: {shown or reason}. Ask an operator for access.",
    )
    raise ImmediateHttpResponse(redirect("accounts:login"))


def _record(sociallogin, action: str, user) -> None:
    audit_record(action=action, obj=user, actor=user, changes=sso_changes(sociallogin))


def sso_changes(sociallogin) -> dict:
    return {"provider": [None, sociallogin.provider.sub_id], "uid": [None, sociallogin.account.uid]}
