"""Every route served under /accounts/ is on a list, so a library upgrade that adds a page (a flow
around our log-in limits, token revocation or sign-up rules) fails here instead of going live; and
every allauth page we serve renders inside the site's layout."""

from __future__ import annotations

import re

import pytest
from django.urls import URLResolver, get_resolver, resolve

from accounts.sso.urls import not_found
from tests.identity.conftest import ALICE

# Sample values for the routes' parameters, by name.
SAMPLES = {
    "provider_id": "corp",
    "organization_slug": "corp",
    "key": "abc",
    "uidb36": "1",
    "uidb64": "MQ",
    "token": "abc",
    "token_id": "1",
    "pk": "1",
}

SERVED = {
    "accounts/login/": "accounts:login",
    "accounts/logout/": "accounts:logout",
    "accounts/signup/": "accounts:signup",
    "accounts/tokens/": "accounts:tokens",
    "accounts/tokens/1/revoke/": "accounts:token_revoke",
    "accounts/password/change/": "accounts:password_change",
    "accounts/password/change/done/": "accounts:password_change_done",
    "accounts/password/reset/": "accounts:password_reset",
    "accounts/password/reset/done/": "accounts:password_reset_done",
    "accounts/reset/MQ/abc/": "accounts:password_reset_confirm",
    "accounts/reset/done/": "accounts:password_reset_complete",
    "accounts/inactive/": "account_inactive",
    "accounts/reauthenticate/": "account_reauthenticate",
    "accounts/3rdparty/login/cancelled/": "socialaccount_login_cancelled",
    "accounts/3rdparty/login/error/": "socialaccount_login_error",
    "accounts/oidc/corp/login/": "openid_connect_login",
    "accounts/oidc/corp/login/callback/": "openid_connect_callback",
    "accounts/saml/corp/login/": "saml_login",
    "accounts/saml/corp/acs/": "saml_acs",
    "accounts/saml/corp/acs/finish/": "saml_finish_acs",
    "accounts/saml/corp/metadata/": "saml_metadata",
    # Passkey sign-up: ours (accounts/passkey_signup.py), not allauth's.
    "accounts/signup/passkey/": "accounts:signup_passkey",
    "accounts/signup/passkey/create/": "accounts:signup_passkey_create",
    # allauth.mfa: authenticators, recovery codes, the second factor of a sign-in, passkey sign-in.
    "accounts/2fa/": "mfa_index",
    "accounts/2fa/authenticate/": "mfa_authenticate",
    "accounts/2fa/reauthenticate/": "mfa_reauthenticate",
    "accounts/2fa/recovery-codes/": "mfa_view_recovery_codes",
    "accounts/2fa/recovery-codes/download/": "mfa_download_recovery_codes",
    "accounts/2fa/recovery-codes/generate/": "mfa_generate_recovery_codes",
    "accounts/2fa/totp/activate/": "mfa_activate_totp",
    "accounts/2fa/totp/deactivate/": "mfa_deactivate_totp",
    "accounts/2fa/webauthn/": "mfa_list_webauthn",
    "accounts/2fa/webauthn/add/": "mfa_add_webauthn",
    "accounts/2fa/webauthn/keys/1/edit/": "mfa_edit_webauthn",
    "accounts/2fa/webauthn/keys/1/remove/": "mfa_remove_webauthn",
    "accounts/2fa/webauthn/login/": "mfa_login_webauthn",
    "accounts/2fa/webauthn/reauthenticate/": "mfa_reauthenticate_webauthn",
}


def routes(patterns=None, prefix: str = ""):
    """Every leaf route's full pattern, as text (path() and re_path() alike)."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, route)
        else:
            yield route


def sample_path(route: str) -> str:
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: SAMPLES[m.group(1)], route)  # re_path() groups
    route = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: SAMPLES[m.group(1)], route)  # path() converters
    return "/" + route.replace("^", "").replace("$", "")


def served_under_accounts() -> dict[str, str]:
    """{sample path: the name of the view that answers it} for every route under /accounts/ that
    is not blocked."""
    served = {}
    for route in routes():
        if not route.startswith("accounts/"):
            continue
        path = sample_path(route)
        match = resolve(path)
        if match.func is not_found:
            continue
        served[path.lstrip("/")] = match.view_name
    return served


def test_only_the_listed_account_routes_are_served():
    assert served_under_accounts() == SERVED


@pytest.mark.parametrize(
    "path",
    [
        "/accounts/email/",
        "/accounts/confirm-email/",
        "/accounts/confirm-email/abc/",
        "/accounts/password/set/",
        "/accounts/password/reset/key/1-abc/",
        "/accounts/password/reset/key/done/",
        "/accounts/login/code/confirm/",
        "/accounts/reauthenticate/code/",
        "/accounts/reauthenticate/code/confirm/",
        "/accounts/3rdparty/",
        "/accounts/3rdparty/signup/",
        "/accounts/social/signup/",
        "/accounts/saml/corp/sls/",
        "/accounts/2fa/trust/",  # "trust this browser": every password sign-in asks for the factor
        "/accounts/2fa/webauthn/signup/",  # allauth's passkey sign-up (it needs e-mail verification)
    ],
)
def test_allauths_duplicate_flows_are_not_found(client, alice, path):
    client.force_login(alice)
    assert client.get(path).status_code == 404


def in_our_layout(answer) -> bool:
    html = answer.content.decode()
    return 'class="topbar"' in html and "· Knowledge</title>" in html and "Menu:" not in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path, status",
    [
        ("/accounts/inactive/", 200),
        ("/accounts/3rdparty/login/cancelled/", 200),
        ("/accounts/3rdparty/login/error/", 401),
    ],
)
def test_allauths_pages_render_in_our_layout(client, path, status):
    answer = client.get(path)
    assert answer.status_code == status and in_our_layout(answer)


def test_the_reauthentication_page_renders_in_our_layout(client, alice):
    client.force_login(alice)
    answer = client.get("/accounts/reauthenticate/")
    assert (
        answer.status_code == 200 and in_our_layout(answer) and 'name="password"' in answer.content.decode()
    )


@pytest.mark.django_db
def test_the_provider_pages_render_in_our_layout(client, start_provider):
    start_provider("corp", {"alice": ALICE})
    confirm = client.get(
        "/accounts/oidc/corp/login/"
    )  # a GET asks to confirm before leaving for the provider
    assert confirm.status_code == 200 and in_our_layout(confirm)
    error = client.get("/accounts/oidc/corp/login/callback/?state=unknown&code=x")
    assert error.status_code == 401 and in_our_layout(error)
