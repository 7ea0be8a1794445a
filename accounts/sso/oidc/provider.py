"""allauth's OpenID Connect provider, with every ID token verified and PKCE always on."""

from __future__ import annotations

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.providers.oauth2.utils import generate_code_challenge
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from allauth.utils import get_request_param

from accounts.sso.oidc.tokens import IdTokenRefused, check_nonce, sign_in_nonce, verified_claims


class VerifiedOIDCAdapter(OpenIDConnectOAuth2Adapter):
    def complete_login(self, request, app, token, **kwargs):
        if not kwargs["response"].get("id_token"):
            raise IdTokenRefused("missing", "the provider sent no ID token")
        return super().complete_login(request, app, token, **kwargs)

    def _decode_id_token(self, app, id_token: str) -> dict:
        claims = verified_claims(
            id_token,
            jwks_uri=self.openid_config["jwks_uri"],
            issuer=self.openid_config["issuer"],
            client_id=app.client_id,
        )
        # allauth matched the state with this session's before the token was fetched.
        check_nonce(claims, get_request_param(self.request, "state") or "")
        return claims


class VerifiedOIDCProvider(OpenIDConnectProvider):
    """Same id and URLs' names as allauth's; its package (this one) serves the views with our adapter."""

    oauth2_adapter_class = VerifiedOIDCAdapter
    # Our urls.py in place of allauth's, whose views build allauth's own adapter.
    package = "accounts.sso.oidc"

    def get_pkce_params(self) -> dict:
        """Whatever the app's settings say: a stolen code is useless without the verifier."""
        return generate_code_challenge()

    def redirect(self, request, process, next_url=None, data=None, **kwargs):
        """allauth's redirect, with the state id chosen first so the nonce can be derived from it."""
        state_id = get_adapter().generate_state_param({})
        auth_params = kwargs.pop("auth_params", None)
        auth_params = dict(self.get_auth_params() if auth_params is None else auth_params)
        auth_params["nonce"] = sign_in_nonce(state_id)
        return super().redirect(
            request, process, next_url, data, auth_params=auth_params, state_id=state_id, **kwargs
        )


provider_classes = [VerifiedOIDCProvider]
