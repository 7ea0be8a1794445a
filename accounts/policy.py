"""What holds an account at a set-up page before it may use anything else (``account_hold``): the
default operator password first, then a second factor MFA_REQUIRED asks for (accounts/mfa.py).

`ensure_operator` creates the operator with OPERATOR_PASSWORD, "admin" unless set; such an account
is flagged (AccountPolicy.must_change_password) and AccountPolicyMiddleware sends it to the
password change form from every page. Any new password clears the flag, whatever path set it
(change form, reset, admin, command): the user's save is where a new password shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save

from accounts.models import AccountPolicy

DEFAULT_OPERATOR_PASSWORD = "admin"
DEFAULT_PASSWORD_MESSAGE = (
    "This account still has the default password: change it first, on the password change page."
)
MFA_REQUIRED_MESSAGE = (
    "This account must have a second factor (an authenticator app or a passkey): "
    "add one on the two-factor authentication page (/accounts/2fa/) first."
)
# Reachable whatever holds an account: log-out, and what never loads the session's user.
ALWAYS_REACHABLE = ("/accounts/logout/", "/static/", "/healthz")


@dataclass(frozen=True)
class Hold:
    """Why an account may use nothing but one set-up page yet: ``message`` (the API's and MCP's
    403), the ``page`` (a URL name) pages send it to with ``notice``, and the path prefixes it may
    still reach besides ALWAYS_REACHABLE."""

    message: str
    page: str
    notice: str
    reachable: tuple[str, ...]


DEFAULT_PASSWORD_HOLD = Hold(
    message=DEFAULT_PASSWORD_MESSAGE,
    page="accounts:password_change",
    notice="Choose a new password: the default one is known to everyone.",
    reachable=("/accounts/password/change/",),
)
MFA_SETUP_HOLD = Hold(
    message=MFA_REQUIRED_MESSAGE,
    page="mfa_index",
    notice="Add a second factor (an authenticator app or a passkey) to use this site.",
    # The MFA pages and the password re-check they may ask for first.
    reachable=("/accounts/2fa/", "/accounts/reauthenticate/"),
)


def connect() -> None:
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="policy-password-changed")


def policy_require_password_change(*, user) -> None:
    AccountPolicy.objects.update_or_create(user=user, defaults={"must_change_password": True})


def must_change_password(user) -> bool:
    """Only operators are ever flagged, so other accounts cost no query."""
    if not user.is_staff:
        return False
    return AccountPolicy.objects.filter(user=user, must_change_password=True).exists()


def account_hold(user) -> Hold | None:
    """What holds ``user`` at a set-up page, or None: the default password first, then a second
    factor MFA_REQUIRED asks for (one at a time, so each page is reachable while it holds). The API
    and MCP refuse a token's request with its message; pages send the account to its page
    (AccountPolicyMiddleware)."""
    from accounts.mfa import mfa_setup_pending  # allauth.mfa's models: after start-up

    if must_change_password(user):
        return DEFAULT_PASSWORD_HOLD
    if mfa_setup_pending(user):
        return MFA_SETUP_HOLD
    return None


def users_with_default_password():
    return get_user_model().objects.filter(account_policy__must_change_password=True).order_by("username")


def _user_saved(sender, instance, created, **kwargs) -> None:
    # Django's AbstractBaseUser.save holds a new password in ``_password`` until after this signal.
    if not created and getattr(instance, "_password", None) is not None:
        AccountPolicy.objects.filter(user=instance, must_change_password=True).update(
            must_change_password=False
        )
