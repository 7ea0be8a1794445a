"""After an SSO sign-in: the audit records and the teams from the provider's groups."""

from __future__ import annotations

from allauth.account.signals import user_logged_in, user_signed_up

from accounts.audit import audit_record
from accounts.sso.adapters import provider_setting, sso_changes
from accounts.sso.saml import guard as saml_guard
from accounts.teams import teams_sync


def connect() -> None:
    saml_guard.connect()
    user_logged_in.connect(_signed_in, dispatch_uid="sso-signed-in")
    user_signed_up.connect(_signed_up, dispatch_uid="sso-signed-up")


def _signed_up(sender, request, user, sociallogin=None, **kwargs) -> None:
    if sociallogin is not None:
        audit_record(action="sso.account_created", obj=user, actor=user, changes=sso_changes(sociallogin))


def _signed_in(sender, request, user, sociallogin=None, **kwargs) -> None:
    if sociallogin is None:
        return
    audit_record(action="sso.login", obj=user, actor=user, changes=sso_changes(sociallogin))
    source, groups = sso_groups(sociallogin)
    teams_sync(user=user, source=source, external_groups=groups)


def sso_groups(sociallogin) -> tuple[str, list]:
    """The team source and the groups the provider sent. OpenID Connect ("oidc:<provider id>"):
    the groups claim from userinfo, else from the ID token (Entra ID puts them only there). SAML
    ("saml:<slug>"): the app's groups attribute (accounts/sso/saml/provider.py)."""
    provider = sociallogin.provider
    if hasattr(provider, "team_source"):
        return provider.team_source, provider.groups(sociallogin.account.extra_data)
    claim = provider_setting(provider.app, "groups_claim", "groups")
    data = sociallogin.account.extra_data or {}
    for part in ("userinfo", "id_token"):
        groups = (data.get(part) or {}).get(claim)
        if groups is not None:
            return f"oidc:{provider.sub_id}", groups if isinstance(groups, list) else [groups]
    return f"oidc:{provider.sub_id}", []
