"""The identity providers the log-in page offers, and the origins its forms may be sent on to."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.providers.saml.utils import fetch_metadata_url_config


@dataclass(frozen=True)
class ProviderButton:
    name: str
    login_url: str  # ours: a POST there redirects to the provider


def provider_buttons(request) -> list[ProviderButton]:
    """One button per provider app (from OIDC_PROVIDERS and the admin's SocialApp rows)."""
    return [
        ProviderButton(name=provider.name, login_url=provider.get_login_url(request))
        for provider in get_adapter().list_providers(request)
    ]


def provider_origins(request) -> list[str]:
    """Where the buttons' POSTs are redirected to: browsers apply CSP form-action to the redirect
    after a form is sent, so without these origins every button would be blocked."""
    origins = set()
    for provider in get_adapter().list_providers(request):
        for url in _sign_in_urls(provider):
            parts = urlsplit(url or "")
            if parts.scheme in ("http", "https") and parts.netloc:
                origins.add(f"{parts.scheme}://{parts.netloc}")
    return sorted(origins)


def _sign_in_urls(provider) -> list[str]:
    """OpenID Connect: the issuer, which is the authorization endpoint's origin for the providers we
    document, and an app's ``openid_configuration_overrides`` address. SAML: the provider's
    sign-in (SSO) address, from its settings or its metadata."""
    settings = provider.app.settings or {}
    if provider.id == "saml":
        return [_saml_sso_url(settings.get("idp") or {})]
    overrides = settings.get("openid_configuration_overrides") or {}
    return [settings.get("server_url"), overrides.get("authorization_endpoint")]


def _saml_sso_url(idp: dict) -> str | None:
    """The sso_url, or the one the metadata names (allauth's cached copy, the one sign-in uses);
    while the metadata cannot be read, its own address, usually the sign-in address's origin too."""
    if not idp.get("metadata_url"):
        return idp.get("sso_url")
    try:
        return fetch_metadata_url_config(idp)["idp"]["singleSignOnService"]["url"]
    except Exception:  # the sign-in itself reports an unreachable provider; the page must render
        return idp["metadata_url"]


def allow_provider_forms(request, response):
    """Adds the providers' origins to this response's CSP form-action (django-csp reads _csp_update)."""
    origins = provider_origins(request)
    if origins:
        response._csp_update = {"form-action": origins}
    return response
