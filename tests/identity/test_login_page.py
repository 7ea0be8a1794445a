"""The log-in page with identity providers: a button per provider, a CSP that lets the buttons'
forms go on to the providers, and sign-up sessions that survive the next request."""

from __future__ import annotations

import pytest

from tests.identity.conftest import ALICE

pytestmark = pytest.mark.django_db


def form_action(answer) -> str:
    policy = answer["Content-Security-Policy"]
    return next(part.strip() for part in policy.split(";") if part.strip().startswith("form-action"))


def test_without_providers_the_page_is_the_password_form_and_forms_stay_on_our_origin(client):
    answer = client.get("/accounts/login/")
    html = answer.content.decode()
    assert 'name="username"' in html and "Sign in with" not in html
    assert form_action(answer) == "form-action 'self'"


def test_each_provider_has_a_button_and_its_origin_is_allowed_as_a_form_target(client, start_provider):
    first = start_provider("corp", {"alice": ALICE})
    second = start_provider("partner", {"alice": ALICE})
    answer = client.get("/accounts/login/")
    html = answer.content.decode()
    assert "Sign in with Test corp" in html and "Sign in with Test partner" in html
    assert 'action="/accounts/oidc/corp/login/"' in html and 'name="username"' in html
    assert form_action(answer).split()[1:] == ["'self'", *sorted([first.issuer, second.issuer])]


def test_the_providers_confirmation_page_allows_its_form_to_go_on_to_the_provider(client, start_provider):
    provider = start_provider("corp", {"alice": ALICE})
    answer = client.get("/accounts/oidc/corp/login/")
    assert answer.status_code == 200 and provider.issuer in form_action(answer)


def test_allauths_own_failed_password_limit_is_off(client, alice):
    """allauth counts failures per username alone (5 in 5 minutes) and would refuse even the right
    password after them: anyone could lock an account's owner out. The log-in limits
    (accounts/login_limits.py) count by username and address instead."""
    client.force_login(alice)
    for _ in range(6):
        assert client.post("/accounts/reauthenticate/", {"password": "wrong"}).status_code == 200
    assert client.post("/accounts/reauthenticate/", {"password": "pw-alice"}).status_code == 302


def test_a_new_account_stays_signed_in_after_sign_up(client):
    """The session names the backend it signed in with; one not in AUTHENTICATION_BACKENDS logs out."""
    form = {
        "username": "dora",
        "email": "dora@example.org",
        "password1": "a-Long-pass-42",
        "password2": "a-Long-pass-42",
    }
    assert client.post("/accounts/signup/", form).status_code == 302
    assert client.get("/collections/").status_code == 200
    assert client.session["_auth_user_backend"] == "accounts.backends.LocalPasswordBackend"
