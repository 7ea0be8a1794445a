"""allauth's OpenID Connect log-in and callback views, built with our verifying adapter."""

from __future__ import annotations

from allauth.account.internal.decorators import login_not_required
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from django.http import Http404

from accounts.sso.oidc.provider import VerifiedOIDCAdapter
from accounts.sso.providers import allow_provider_forms


@login_not_required
def login(request, provider_id):
    """A POST leaves for the provider; a GET shows allauth's confirmation form, whose POST is
    redirected there too, so its CSP must allow the providers as form targets."""
    try:
        response = OAuth2LoginView.adapter_view(VerifiedOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist as exc:
        raise Http404 from exc
    return allow_provider_forms(request, response)


@login_not_required
def callback(request, provider_id):
    try:
        return OAuth2CallbackView.adapter_view(VerifiedOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist as exc:
        raise Http404 from exc
