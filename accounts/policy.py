"""The default operator password must be changed before anything else.

`ensure_operator` creates the operator with OPERATOR_PASSWORD, "admin" unless set; such an account
is flagged (AccountPolicy.must_change_password) and AccountPolicyMiddleware sends it to the
password change form from every page. Any new password clears the flag, whatever path set it
(change form, reset, admin, command): the user's save is where a new password shows.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save

from accounts.models import AccountPolicy

DEFAULT_OPERATOR_PASSWORD = "admin"
DEFAULT_PASSWORD_MESSAGE = (
    "This account still has the default password: change it first, on the password change page."
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


def account_hold(user) -> str | None:
    """Why ``user`` may use nothing but a set-up page yet, or None: the default password first, then
    a second factor MFA_REQUIRED asks for. The API and MCP refuse a token's request with it; pages
    send the account to the set-up page instead (AccountPolicyMiddleware)."""
    from accounts.mfa import MFA_REQUIRED_MESSAGE, mfa_setup_pending  # allauth.mfa's models: after start-up

    if must_change_password(user):
        return DEFAULT_PASSWORD_MESSAGE
    if mfa_setup_pending(user):
        return MFA_REQUIRED_MESSAGE
    return None


def users_with_default_password():
    return get_user_model().objects.filter(account_policy__must_change_password=True).order_by("username")


def _user_saved(sender, instance, created, **kwargs) -> None:
    # Django's AbstractBaseUser.save holds a new password in ``_password`` until after this signal.
    if not created and getattr(instance, "_password", None) is not None:
        AccountPolicy.objects.filter(user=instance, must_change_password=True).update(
            must_change_password=False
        )
