"""Who may sign in with a password: local accounts, and an LDAP directory's users.

One backend for every local password path (log-in page, admin log-in, API password exchange, the
password change form's old-password check), so the LOCAL_LOGIN rule cannot be missed by one of
them. The directory's backend is in AUTHENTICATION_BACKENDS only when AUTH_LDAP_SERVER_URI is set.
"""

from __future__ import annotations

import re

from allauth.account.auth_backends import AuthenticationBackend
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.utils import timezone
from django_auth_ldap.backend import LDAPBackend

from accounts.audit import AuditSubject, audit_record
from accounts.directory import still_there
from accounts.models import DirectoryAccount
from accounts.teams import teams_sync


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


# The names a directory sign-in accepts: letters, digits and . _ @ - (sAMAccountName, uid, a UPN).
# Checked before anything reaches the directory: no filter characters (* ( ) \ NUL) at all, even
# though django-auth-ldap escapes them too.
DIRECTORY_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,149}$")


class DirectoryBackend(LDAPBackend):
    """django-auth-ldap's bind and search, with the rules it lacks: an inactive account is refused
    (at sign-in and on every request), a local account is never taken over by name (only an
    account linked to the DN is the directory user's), the user is re-checked in the directory
    (accounts/directory.py), and teams follow the directory's groups (source "ldap")."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not isinstance(username, str) or not DIRECTORY_USERNAME.match(username) or not password:
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            return None
        if not user.is_active:
            _refused(user, "the account is inactive")
            return None
        dn = user.ldap_user.dn.lower()
        DirectoryAccount.objects.update_or_create(
            user=user, defaults={"dn": dn, "username": username, "checked_at": timezone.now()}
        )
        teams_sync(user=user, source="ldap", external_groups=self._groups(user.ldap_user))
        return user

    def _groups(self, ldap_user) -> list[str]:
        """The user's directory groups, by name and by DN (a mapping may name either); none when
        no group search is configured."""
        if self.settings.GROUP_SEARCH is None:
            return []
        return [*ldap_user.group_names, *ldap_user.group_dns]

    def get_or_build_user(self, username, ldap_user):
        """The account linked to this DN, else a new one; never an existing account by its name."""
        link = DirectoryAccount.objects.select_related("user").filter(dn=ldap_user.dn.lower()).first()
        if link is not None:
            return link.user, False
        model = self.get_user_model()
        existing = model.objects.filter(username__iexact=username).first()
        if existing is not None:
            _refused(existing, "a local account has this name")
            raise ldap_user.AuthenticationFailed("a local account has this name")
        return model(username=username.lower()), True

    def get_user(self, user_id):
        """The signed-in user, while active and still in the directory (django-auth-ldap's own
        get_user returns inactive users: their sessions would stay valid)."""
        user = self.get_user_model().objects.filter(pk=user_id, is_active=True).first()
        link = DirectoryAccount.objects.filter(user_id=user_id).first()
        if user is None or link is None:
            return None
        return user if still_there(user, link) else None


def _refused(user, reason: str) -> None:
    audit_record(
        action="ldap.login_refused",
        obj=AuditSubject(object_type="auth.user", object_id=user.pk, object_repr=user.get_username()),
        changes={"reason": [None, reason]},
    )
