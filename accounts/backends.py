"""Who may sign in with a local password.

One backend for every password path (log-in page, admin log-in, API password exchange, the password
change form's old-password check), so the LOCAL_LOGIN rule cannot be missed by one of them.
"""

from __future__ import annotations

from allauth.account.auth_backends import AuthenticationBackend
from django.conf import settings
from django.contrib.auth.backends import ModelBackend

from accounts.audit import AuditSubject, audit_record


class LocalPasswordBackend(AuthenticationBackend):
    """Django's username and password check (exact username, as the log-in limits count it), refused
    for everyone but the break-glass accounts while local log-in is off.

    A subclass of allauth's backend only so that allauth signs SSO users in with it: a session
    names its backend, and one no longer in AUTHENTICATION_BACKENDS logs its user out.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        # allauth's own lookup is case-insensitive: "ALICE" would be a name the failure counts
        # (by the name typed) do not add up with "alice".
        user = ModelBackend.authenticate(self, request, username=username, password=password, **kwargs)
        if user is None or local_login_allowed(user):
            return user
        audit_record(
            action="auth.local_login_refused",
            obj=AuditSubject(object_type="auth.user", object_id=user.pk, object_repr=user.get_username()),
            changes={"reason": [None, "local log-in is off"]},
        )
        return None


def local_login_allowed(user) -> bool:
    """Whether ``user`` may sign in with a password: anyone while local log-in is on, else only a
    break-glass superuser (a name on the list alone must not reopen the door for an ordinary account)."""
    if settings.LOCAL_LOGIN_ENABLED:
        return True
    return user.is_superuser and user.get_username() in settings.LOCAL_LOGIN_BREAK_GLASS
