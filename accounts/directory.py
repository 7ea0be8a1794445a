"""Whether an LDAP directory user may still use the product: asked of the directory again once
LDAP_RECHECK_SECONDS have passed since it last confirmed the user, on page sessions
(DirectoryBackend.get_user) and on API tokens and MCP (accounts.api_tokens.token_authenticate).

A user the directory no longer finds (deleted, moved out of the search base, or no longer matched
by the search filter, e.g. a disabled Active Directory account the filter leaves out) is
deactivated at once, which ends every session and token. While the directory cannot be reached,
users it confirmed within UNREACHABLE_GRACE keep working; after that they are refused (not
deactivated: the directory, not the user, is gone).
"""

from __future__ import annotations

from datetime import timedelta

import ldap
from django.conf import settings
from django.utils import timezone
from django_auth_ldap.backend import LDAPBackend, _LDAPUser

from accounts.audit import audit_record
from accounts.models import DirectoryAccount

UNREACHABLE_GRACE = timedelta(minutes=15)


def directory_allows(user) -> bool:
    """For API tokens: True for an account the directory does not manage, else as ``still_there``."""
    link = DirectoryAccount.objects.filter(user_id=user.pk).first()
    return link is None or still_there(user, link)


def still_there(user, link: DirectoryAccount) -> bool:
    """Whether the directory still has ``link``'s user (asking it only when the last answer is
    older than LDAP_RECHECK_SECONDS)."""
    now = timezone.now()
    if now - link.checked_at < timedelta(seconds=settings.LDAP_RECHECK_SECONDS):
        return True
    try:
        found = directory_dn(link.username)
    except ldap.LDAPError:
        return now - link.checked_at < UNREACHABLE_GRACE
    if found is not None and found.lower() == link.dn:
        DirectoryAccount.objects.filter(pk=link.pk).update(checked_at=now)
        return True
    _deactivate(user, link)
    return False


def directory_dn(username: str) -> str | None:
    """The DN the configured user search finds for ``username`` now (None when none or several),
    searched with the service account; raises ldap.LDAPError when the directory cannot be asked."""
    ldap_user = _LDAPUser(LDAPBackend(), username=username)  # its connection: our TLS options, bound
    results = ldap_user.settings.USER_SEARCH.execute(ldap_user.connection, {"user": username})
    return results[0][0] if results and len(results) == 1 else None


def _deactivate(user, link: DirectoryAccount) -> None:
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    audit_record(
        action="ldap.user_missing",
        obj=user,
        changes={"dn": [None, link.dn], "is_active": [True, False]},
    )
