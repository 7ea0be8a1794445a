"""The identity providers the log-in page offers, and the origins its forms may be sent on to."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from allauth.socialaccount.adapter import get_adapter


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
    after a form is sent, so without these origins every button would be blocked.

    The issuer's origin, which is the authorization endpoint's for the providers we document; an
    app's ``openid_configuration_overrides`` may name another.
    """
    origins = set()
    for provider in get_adapter().list_providers(request):
        settings = provider.app.settings or {}
        overrides = settings.get("openid_configuration_overrides") or {}
        for url in (settings.get("server_url"), overrides.get("authorization_endpoint")):
            parts = urlsplit(url or "")
            if parts.scheme in ("http", "https") and parts.netloc:
                origins.add(f"{parts.scheme}://{parts.netloc}")
    return sorted(origins)


def allow_provider_forms(request, response):
    """Adds the providers' origins to this response's CSP form-action (django-csp reads _csp_update)."""
    origins = provider_origins(request)
    if origins:
        response._csp_update = {"form-action": origins}
    return response
