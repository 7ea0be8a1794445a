"""Signing in with SAML 2.0 against a real provider (pysaml2, on 127.0.0.1), no mocks: the
product's metadata, the provider's from a URL or a file, accounts made just in time, teams from
the groups attribute, and the attacks a response can carry, each refused and audited."""

from __future__ import annotations

import json

import pytest
from allauth.socialaccount.models import SocialAccount, SocialApp
from django.contrib.auth.models import User
from django.test import Client

from accounts.models import AuditEvent
from config.base.identity import saml_apps_from_env
from tests.identity.conftest import ALICE_SAML, UNSAFE_ADVANCED, mapped_team, refusals, signed_in_user
from tests.identity.saml_idp import (
    OUR_HOST,
    OUR_ORIGIN,
    answer_from_provider,
    post_answer,
    sign_in,
    unsolicited_answer,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def engineering():
    return mapped_team("saml:corp")


@pytest.mark.parametrize("metadata", ["url", "file"])
def test_a_first_sign_in_creates_the_account_and_maps_the_group_to_its_team(
    client, start_saml, engineering, metadata
):
    start_saml({"alice": ALICE_SAML}, metadata=metadata)
    answer = sign_in(client, "corp", "alice")
    assert answer.status_code == 302, answer.content[:2000]
    user = signed_in_user(client)
    assert user is not None and user.email == "alice@example.org", refusals()
    assert list(user.groups.all()) == [engineering] and not user.has_usable_password()
    assert SocialAccount.objects.get(user=user).provider == "corp"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"sso.account_created", "sso.login", "sso.teams_synced", "auth.login"} <= actions
    assert client.get("/collections/").status_code == 200


def test_the_product_serves_its_metadata_asking_for_signed_assertions(client, start_saml):
    start_saml({"alice": ALICE_SAML}, unsafe=True)
    metadata = client.get("/accounts/saml/corp/metadata/").content.decode()
    assert f'entityID="{OUR_ORIGIN}/accounts/saml/corp/metadata/"' in metadata
    assert f'Location="{OUR_ORIGIN}/accounts/saml/corp/acs/"' in metadata
    assert 'WantAssertionsSigned="true"' in metadata


def test_a_later_sign_in_without_the_group_removes_the_team(client, start_saml, engineering):
    idp = start_saml({"alice": ALICE_SAML})
    sign_in(client, "corp", "alice")
    user = signed_in_user(client)
    idp.users["alice"] = {**ALICE_SAML, "groups": ["sales"]}
    client.logout()
    sign_in(client, "corp", "alice")
    assert signed_in_user(client) == user and not user.groups.exists()


def test_the_log_in_page_has_a_button_and_allows_the_providers_sign_in_address(client, start_saml):
    idp = start_saml({"alice": ALICE_SAML}, metadata="file")
    answer = client.get("/accounts/login/")
    assert 'action="/accounts/saml/corp/login/"' in answer.content.decode()
    assert "Sign in with Test corp" in answer.content.decode()
    form_action = next(p for p in answer["Content-Security-Policy"].split(";") if "form-action" in p)
    assert idp.url in form_action.split()


def test_with_just_in_time_accounts_off_a_new_provider_user_is_refused(client, start_saml):
    start_saml({"alice": ALICE_SAML}, jit=False)
    sign_in(client, "corp", "alice")
    assert signed_in_user(client) is None and refusals() == ["just-in-time accounts are off"]


def test_two_saml_providers_keep_their_users_apart(client, start_saml):
    """The same user id at two providers is two accounts: each app has its own provider id."""
    start_saml({"alice": ALICE_SAML}, slug="corp")
    start_saml({"alice": {**ALICE_SAML, "mail": ["alice@partner.example"]}}, slug="partner")
    sign_in(client, "corp", "alice")
    first = signed_in_user(client)
    client.logout()
    sign_in(client, "partner", "alice")
    second = signed_in_user(client)
    assert first is not None and second is not None and first != second


# Attacks: each is refused, leaves nobody signed in, and is audited with its reason. The app says
# the unsafe opposite of the forced settings (unsafe=True) in each: the provider class overrides it.


def assert_refused(client, answer, reason: str) -> None:
    assert signed_in_user(client) is None
    assert answer.status_code in (302, 400, 401, 403), answer.status_code
    assert reason in refusals(), refusals()
    assert not User.objects.filter(email="alice@example.org").exists()


@pytest.mark.security
@pytest.mark.parametrize(
    "tamper, reason",
    [
        ("unsigned", "unsigned assertion"),
        ("unsigned-assertion", "unsigned assertion"),
        ("foreign-key", "signature"),
        ("edited", "signature"),
        ("audience", "audience"),
        ("sha1", "deprecated algorithm"),
    ],
)
def test_a_forged_or_misdirected_response_is_refused(client, start_saml, tamper, reason):
    idp = start_saml({"alice": ALICE_SAML}, unsafe=True)
    idp.tamper = tamper
    assert_refused(client, sign_in(client, "corp", "alice"), reason)


@pytest.mark.security
def test_a_replayed_response_is_refused_in_the_same_session(client, start_saml):
    start_saml({"alice": ALICE_SAML}, unsafe=True)
    answer = answer_from_provider(client, "corp", "alice")
    post_answer(client, answer)
    assert signed_in_user(client) is not None
    client.logout()
    replayed = post_answer(client, answer)
    assert signed_in_user(client) is None and refusals() == ["replay"] and replayed.status_code != 302


@pytest.mark.security
def test_a_captured_response_is_refused_in_another_session_with_its_own_sign_in(client, start_saml):
    start_saml({"alice": ALICE_SAML}, unsafe=True)
    captured = answer_from_provider(client, "corp", "alice")
    post_answer(client, captured)
    attacker = Client(HTTP_HOST=OUR_HOST)
    attacker.post("/accounts/saml/corp/login/")  # a sign-in of its own is waiting
    post_answer(attacker, captured)
    assert signed_in_user(attacker) is None and refusals() == ["replay"]


@pytest.mark.security
def test_a_sign_in_the_provider_starts_itself_is_refused(client, start_saml):
    idp = start_saml({"alice": ALICE_SAML}, unsafe=True)
    assert_refused(
        client, post_answer(client, unsolicited_answer(idp, "corp", "alice")), "IdP-initiated sign-in"
    )


@pytest.mark.security
def test_a_provider_user_named_like_a_local_account_never_gets_it(client, start_saml, bob):
    start_saml({"mallory": {**ALICE_SAML, "uid": ["bob"], "mail": ["mallory@example.org"]}})
    sign_in(client, "corp", "mallory")
    mallory = signed_in_user(client)
    assert mallory is not None and mallory != bob and mallory.username != "bob"


@pytest.fixture
def carol(make_user):
    return make_user("carol", email="carol@example.org")


@pytest.mark.security
def test_an_address_the_provider_calls_verified_links_nothing_unless_the_operator_says_so(
    client, start_saml, carol
):
    """The response's own email_verified attribute (read by allauth's default attribute mapping) is
    not believed: only the provider's email_verified setting makes its addresses verified."""
    carol.set_unusable_password()
    carol.save()
    verified = {"http://schemas.auth0.com/email_verified": ["true"], "mail": ["carol@example.org"]}
    start_saml({"mallory": {**ALICE_SAML, **verified}}, email_authentication=True, attribute_mapping=None)
    sign_in(client, "corp", "mallory")
    assert signed_in_user(client) is None and not SocialAccount.objects.exists()
    assert refusals() == ["link refused: the provider did not verify the e-mail address"]


def test_an_account_made_for_single_sign_on_links_where_the_operator_trusts_the_addresses(
    client, start_saml, carol
):
    carol.set_unusable_password()
    carol.save()
    start_saml(
        {"carol": {**ALICE_SAML, "mail": ["carol@example.org"]}},
        email_verified=True,
        email_authentication=True,
    )
    sign_in(client, "corp", "carol")
    assert signed_in_user(client) == carol


def test_admin_made_saml_apps_are_stored_with_the_safe_settings_and_their_own_id(db):
    app = SocialApp.objects.create(
        provider="saml",
        client_id="made-here",
        name="Made here",
        settings={
            "idp": {"entity_id": "x", "sso_url": "https://idp.example/sso", "x509cert": "x"},
            "advanced": UNSAFE_ADVANCED,
        },
    )
    app.refresh_from_db()
    assert app.provider_id == "made-here"
    assert all(app.settings["advanced"][key] is True for key in UNSAFE_ADVANCED)


def test_the_providers_confirmation_and_error_pages_render_in_our_layout(client, start_saml):
    from tests.identity.test_routes import in_our_layout

    idp = start_saml({"alice": ALICE_SAML})
    confirm = client.get("/accounts/saml/corp/login/")  # a GET asks to confirm before leaving
    assert confirm.status_code == 200 and in_our_layout(confirm)
    assert idp.url in confirm["Content-Security-Policy"]
    idp.tamper = "unsigned"
    refused = sign_in(client, "corp", "alice")
    assert refused.status_code == 401 and in_our_layout(refused)


def test_the_log_in_page_renders_while_a_providers_metadata_cannot_be_read(client, settings, monkeypatch):
    from tests.served import free_port

    dead = f"http://127.0.0.1:{free_port()}/metadata"
    monkeypatch.setenv(
        "SAML_PROVIDERS", json.dumps([{"slug": "gone", "metadata_url": dead, "entity_id": dead}])
    )
    settings.SOCIALACCOUNT_PROVIDERS = {
        **settings.SOCIALACCOUNT_PROVIDERS,
        "saml": {**settings.SOCIALACCOUNT_PROVIDERS["saml"], "APPS": saml_apps_from_env()},
    }
    answer = client.get("/accounts/login/")
    assert answer.status_code == 200 and "Sign in with gone" in answer.content.decode()
    assert dead.removesuffix("/metadata") in answer["Content-Security-Policy"]
