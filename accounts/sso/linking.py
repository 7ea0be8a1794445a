"""When a provider's user may take over an existing account by e-mail address (and when not).

Never by name: a provider's preferred_username is only a suggestion for a new account's username.
By e-mail only when all of these hold, because whoever controls the address at the provider gets
the account, its collections and its API tokens:

* the provider opted in (its app setting ``email_authentication``; off by default);
* the provider says it verified the address (OpenID Connect ``email_verified`` true);
* exactly one account has the address, and it is active and neither staff nor superuser (an
  operator account is linked by an operator, in the admin, or not at all);
* the account has no usable password (it was made for single sign-on), or it verified the address
  with us: otherwise whoever registered it with somebody else's address would keep a password
  into the account the real owner now uses.
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db.models import Q


def accounts_with_email(email: str) -> list:
    """The accounts that have ``email``, on the user or as an allauth address (case-insensitive)."""
    by_address = EmailAddress.objects.filter(email__iexact=email).values("user_id")
    users = get_user_model().objects.filter(Q(email__iexact=email) | Q(pk__in=by_address))
    return list(users.distinct()[:2])


def link_refusal(*, app_settings: dict, address, users: list) -> str | None:
    """Why the provider's ``address`` (an unsaved allauth EmailAddress) may not link to ``users``
    (the accounts that have it), or None when it may link to the only one."""
    if not app_settings.get("email_authentication", False):
        return "linking by e-mail is off for this provider"
    if not address.verified:
        return "the provider did not verify the e-mail address"
    if len(users) != 1:
        return "several accounts have this e-mail address"
    user = users[0]
    if user.is_staff or user.is_superuser:
        return "staff accounts are never linked by e-mail"
    if not user.is_active:
        return "the account is inactive"
    if user.has_usable_password() and not _verified_here(user, address.email):
        return "the account has a password and never verified this e-mail address"
    return None


def _verified_here(user, email: str) -> bool:
    return EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists()
