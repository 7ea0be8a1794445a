"""allauth's OpenID Connect log-in and callback views, built with our verifying adapter."""

from __future__ import annotations

from allauth.account.internal.decorators import login_not_required
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from django.http import Http404

from accounts.sso.oidc.provider import VerifiedOIDCAdapter


@login_not_required
def login(request, provider_id):
    try:
        return OAuth2LoginView.adapter_view(VerifiedOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist as exc:
        raise Http404 from exc


@login_not_required
def callback(request, provider_id):
    try:
        return OAuth2CallbackView.adapter_view(VerifiedOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist as exc:
        raise Http404 from exc
