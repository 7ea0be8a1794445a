"""The SAML sign-in's views that differ from allauth's: the log-in view lets its form go on to the
provider (CSP form-action), and the response view adds our checks (accounts/sso/saml/checks.py)
and records every refusal with its reason."""

from __future__ import annotations

from allauth.account.internal.decorators import login_not_required
from allauth.core.internal import httpkit
from allauth.socialaccount.helpers import complete_social_login, render_authentication_error
from allauth.socialaccount.providers.base.constants import AuthError
from allauth.socialaccount.providers.saml import views as allauth_views
from allauth.socialaccount.providers.saml.utils import build_auth, get_app_or_404, prepare_django_request
from allauth.socialaccount.sessions import LoginSession
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse
from onelogin.saml2.errors import OneLogin_Saml2_Error

from accounts.sso.providers import allow_provider_forms
from accounts.sso.saml.checks import ResponseRefused, bound_to_sign_in, checked_response, use_once


@login_not_required
def login(request, organization_slug):
    """A POST leaves for the provider; a GET shows allauth's confirmation form, whose POST is
    redirected there too, so its CSP must allow the providers as form targets."""
    response = allauth_views.login(request, organization_slug=organization_slug)
    return allow_provider_forms(request, response)


@login_not_required
def finish_acs(request, organization_slug):
    """allauth's ACS view stored the provider's POST in a cookie of its own (so that the session
    cookie, which a cross-site POST does not carry, is there now); the response is checked here."""
    provider = get_app_or_404(request, organization_slug).get_provider(request)
    posted = _posted_response(request)
    if posted is None:
        return _refused(request, provider, ResponseRefused("no response", "the ACS cookie is missing"))
    try:
        auth = _auth(posted, provider)
        response = checked_response(auth, prepare_django_request(posted))
        request_id = bound_to_sign_in(
            response,
            sp_entity_id=auth.get_settings().get_sp_data()["entityId"],
            acs_url=request.build_absolute_uri(reverse("saml_acs", args=[organization_slug])),
        )
        use_once(auth, provider_id=provider.sub_id)
        state = _sign_in_state(request, provider, request_id)
    except ResponseRefused as refusal:
        return _refused(request, provider, refusal)
    if not auth.is_authenticated():
        return render_authentication_error(request, provider, error=AuthError.CANCELLED)
    sociallogin = provider.sociallogin_from_response(request, auth)
    sociallogin.state = state
    return complete_social_login(request, sociallogin)


def _auth(posted, provider):
    """python3-saml's object for this app; the provider's metadata is read (or taken from the cache)
    here, so an unreachable or broken metadata address refuses the sign-in instead of failing it."""
    try:
        return build_auth(posted, provider)
    except (OSError, ValueError, OneLogin_Saml2_Error) as exc:
        raise ResponseRefused("provider metadata unavailable", str(exc)) from exc


def _posted_response(request) -> HttpRequest | None:
    acs_session = LoginSession(request, "saml_acs_session", "saml-acs-session")
    data = acs_session.store.get("request")
    acs_session.delete()
    return httpkit.deserialize_request(data, HttpRequest()) if data else None


def _sign_in_state(request, provider, request_id: str) -> dict:
    """The sign-in this session started with ``request_id`` (consumed: it answers once)."""
    try:
        return provider.unstash_redirect_state(request, request_id)
    except PermissionDenied as exc:
        raise ResponseRefused("not this session's sign-in", "no sign-in of this session awaits it") from exc


def _refused(request, provider, refusal: ResponseRefused):
    return render_authentication_error(
        request, provider, extra_context={"reason": refusal.reason, "detail": str(refusal)}
    )
