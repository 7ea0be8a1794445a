"""Multi-factor authentication for local accounts: who it covers, and allauth.mfa's adapter.

allauth.mfa stores the authenticators (TOTP, WebAuthn keys and passkeys, recovery codes), runs
the second-factor step of a sign-in and the pages that manage them; these are our rules on top:

* Local accounts only. An account that signs in through an identity provider (a SocialAccount)
  or an LDAP directory (a DirectoryAccount) gets its MFA from that provider: it may not add
  authenticators here, and MFA_REQUIRED does not cover it. A directory session's backend must
  stay the directory's (it re-checks the user there), which a second-factor step would lose.
* MFA_REQUIRED ("off", "staff", "all") names the local accounts that must have an authenticator
  before using the site; AccountPolicyMiddleware holds them at the MFA pages until they add one.
* The WebAuthn relying party is the public address (KNOWLEDGE_PUBLIC_URL), never the request's
  Host header: a passkey belongs to one site name, and a client-written header must not pick it.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from allauth.core.internal.cryptokit import normalize_user_code
from allauth.mfa import app_settings as mfa_settings
from allauth.mfa.adapter import DefaultMFAAdapter
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.utils import timezone

from accounts.models import DirectoryAccount, ScimAccount, SpentTotpCode

SITE_NAME = "Knowledge"
MFA_ACCOUNT_TOKEN_MESSAGE = (
    "This account signs in with a second factor, so a password alone cannot make an API token: "
    "sign in on the log-in page and create one on the API tokens page (/accounts/tokens/)."
)
EXTERNAL_ACCOUNT_MESSAGE = (
    "Your account signs in through your organisation's provider, which handles two-factor authentication."
)


def mfa_local_account(user) -> bool:
    """Whether ``user``'s sign-ins are ours to protect. A directory's account signs in at the
    directory, a provider's account without a password at the provider (which does its MFA); an
    account that keeps a password signs in here with it, linked to a provider or not (an operator
    linked in the admin, someone who connected a provider to a local account), so it is ours."""
    if DirectoryAccount.objects.filter(user=user).exists():
        return False
    return user.has_usable_password() or not user.socialaccount_set.exists()


def passkey_only_account(user) -> bool:
    """Whether ``user`` signs in with a passkey alone (a passkey sign-up): a local account with no
    password and a passkey, not one a provider, a directory or SCIM made (those sign in there)."""
    if user.has_usable_password() or ScimAccount.objects.filter(user=user).exists():
        return False
    passkeys = Authenticator.objects.filter(user=user, type=Authenticator.Type.WEBAUTHN)
    return mfa_local_account(user) and passkeys.exists()


def mfa_enabled(user) -> bool:
    """Whether ``user`` has a second factor (recovery codes alone are a fallback, not a factor)."""
    types = [Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN]
    return Authenticator.objects.filter(user=user, type__in=types).exists()


def _mfa_rule_covers(user) -> bool:
    """MFA_REQUIRED's rule alone: "all", or "staff" for an operator; providers' accounts aside."""
    rule = settings.MFA_REQUIRED
    return rule == "all" or (rule == "staff" and user.is_staff)


def mfa_setup_pending(user) -> bool:
    """Whether ``user`` is covered by MFA_REQUIRED and has no second factor yet.

    Asked on every request of a covered account, so the rule (no query) comes first and then the
    second factor (one query, and the answer for every account that has set one up)."""
    if not _mfa_rule_covers(user) or mfa_enabled(user):
        return False
    return mfa_local_account(user)


def totp_code_spend(*, user, code: str) -> bool:
    """Marks an authenticator app's accepted ``code`` spent for ``user``: True the first time, False
    when it was spent already while still valid. In the database, since a mark in the cache (as
    allauth keeps one) may be evicted and let the code pass again."""
    life = timedelta(seconds=mfa_settings.TOTP_PERIOD * (2 * mfa_settings.TOTP_TOLERANCE + 1))
    SpentTotpCode.objects.filter(user=user, spent_at__lt=timezone.now() - life).delete()
    _, created = SpentTotpCode.objects.get_or_create(user=user, code=normalize_user_code(code))
    return created


def passkey_rp_id() -> str:
    """The relying party's ID: the public address's host name (an IP address is not a valid one)."""
    return urlsplit(settings.KNOWLEDGE_PUBLIC_URL).hostname or "localhost"


class MFAAdapter(DefaultMFAAdapter):
    def get_totp_issuer(self) -> str:
        """The name authenticator apps show beside the code: the product's, not the Host header's."""
        return SITE_NAME

    def get_public_key_credential_rp_entity(self) -> dict[str, str]:
        return {"id": passkey_rp_id(), "name": SITE_NAME}
