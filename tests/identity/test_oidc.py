"""Signing in with OpenID Connect against a real provider (npm's oidc-provider), no mocks: accounts
made just in time, teams from the groups claim, several providers at once, and the attacks a
provider's answer can carry, each refused and audited."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from allauth.socialaccount.models import SocialAccount, SocialApp
from django.contrib.auth.models import Group, User

from accounts.models import AuditEvent, TeamGrant
from tests.identity.conftest import ALICE, mapped_team, refusals, signed_in_user
from tests.identity.oidc_provider import CLIENT_SECRET, callback_from_provider, sign_in, with_query

pytestmark = pytest.mark.django_db


@pytest.fixture
def engineering():
    return mapped_team("oidc:corp")


def assert_refused(client, answer, reason: str) -> None:
    assert signed_in_user(client) is None
    assert answer.status_code in (302, 401), answer.status_code
    assert any(refusal.startswith(reason) for refusal in refusals()), refusals()


# Sign-in, accounts and teams


def test_a_first_sign_in_creates_the_account_and_maps_the_group_to_its_team(
    client, start_provider, engineering
):
    start_provider("corp", {"alice": ALICE})
    answer = sign_in(client, "corp", "alice")
    assert answer.status_code == 302, answer.content[:1000]
    user = signed_in_user(client)
    assert user is not None and user.email == "alice@example.org" and not user.has_usable_password()
    assert list(user.groups.all()) == [engineering]
    assert SocialAccount.objects.get(user=user).provider == "corp"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"sso.account_created", "sso.login", "sso.teams_synced", "auth.login"} <= actions
    assert client.get("/collections/").status_code == 200  # the session holds on the next request


def test_a_later_sign_in_without_the_group_removes_only_the_team_the_provider_granted(
    client, start_provider, engineering
):
    provider = start_provider("corp", {"alice": ALICE})
    sign_in(client, "corp", "alice")
    user = signed_in_user(client)
    by_hand = Group.objects.create(name="Sales")
    user.groups.add(by_hand)
    provider.set_users({"alice": {**ALICE, "groups": ["marketing"]}})
    client.logout()
    sign_in(client, "corp", "alice")
    assert signed_in_user(client) == user
    assert list(user.groups.all()) == [by_hand]
    assert not TeamGrant.objects.filter(user=user).exists()


def test_a_team_joined_by_hand_is_not_taken_over_by_the_provider(client, start_provider, engineering, alice):
    """alice (local) already in Engineering; a provider user in the same group joins without a grant
    being recorded for a membership it did not make."""
    start_provider("corp", {"ann": {"groups": ["Engineering"]}})  # case differs: still the mapping
    sign_in(client, "corp", "ann")
    ann = signed_in_user(client)
    assert list(ann.groups.all()) == [engineering]
    assert TeamGrant.objects.filter(user=ann, team=engineering, source="oidc:corp").exists()


def test_with_just_in_time_accounts_off_a_new_provider_user_is_refused(client, start_provider, settings):
    settings.SSO_JIT = False
    start_provider("corp", {"alice": ALICE})
    answer = sign_in(client, "corp", "alice")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    assert signed_in_user(client) is None and not User.objects.filter(email="alice@example.org").exists()
    assert refusals() == ["just-in-time accounts are off"]


def test_a_provider_may_allow_just_in_time_accounts_when_the_default_is_off(client, start_provider, settings):
    settings.SSO_JIT = False
    start_provider("corp", {"alice": ALICE}, jit=True)
    sign_in(client, "corp", "alice")
    assert signed_in_user(client) is not None


def test_with_just_in_time_accounts_off_a_linked_account_still_signs_in(client, start_provider, settings):
    start_provider("corp", {"alice": ALICE})
    sign_in(client, "corp", "alice")
    user = signed_in_user(client)
    client.logout()
    settings.SSO_JIT = False
    sign_in(client, "corp", "alice")
    assert signed_in_user(client) == user


def test_two_providers_at_once_each_sign_their_own_users_in(client, start_provider):
    start_provider("corp", {"alice": ALICE})
    start_provider("partner", {"pat": {"email": "pat@partner.example", "email_verified": True}})
    sign_in(client, "corp", "alice")
    alice = signed_in_user(client)
    client.logout()
    sign_in(client, "partner", "pat")
    pat = signed_in_user(client)
    assert alice is not None and pat is not None and alice != pat
    assert {(a.provider, a.uid) for a in SocialAccount.objects.all()} == {
        ("corp", "alice"),
        ("partner", "pat"),
    }


def test_a_provider_configured_in_the_admin_signs_in_too(client, start_provider):
    provider = start_provider("corp", {"alice": ALICE})
    app = SocialApp.objects.create(
        provider="openid_connect",
        provider_id="admin-made",
        name="Made in the admin",
        client_id="knowledge-corp",
        secret=CLIENT_SECRET,
        # PKCE is switched off here on purpose: the provider class sends it regardless.
        settings={
            "server_url": provider.issuer,
            "oauth_pkce_enabled": False,
            "token_auth_method": "client_secret_post",
        },
    )
    start = client.post("/accounts/oidc/admin-made/login/")
    query = dict(parse_qsl(urlsplit(start["Location"]).query))
    assert query["code_challenge_method"] == "S256" and query["code_challenge"] and query["nonce"]
    assert app.pk and b"Sign in with Made in the admin" in client.get("/accounts/login/").content


def test_the_sign_in_sends_pkce_and_a_nonce_bound_to_its_state(client, start_provider):
    start_provider("corp", {"alice": ALICE})
    first = dict(parse_qsl(urlsplit(client.post("/accounts/oidc/corp/login/")["Location"]).query))
    second = dict(parse_qsl(urlsplit(client.post("/accounts/oidc/corp/login/")["Location"]).query))
    assert first["code_challenge_method"] == "S256"
    assert first["nonce"] != second["nonce"] and first["state"] != second["state"]


# Attacks: each is refused, leaves nobody signed in, and is audited with its reason


@pytest.mark.security
def test_a_callback_with_another_state_is_refused(client, start_provider):
    start_provider("corp", {"alice": ALICE})
    callback = callback_from_provider(client, "corp", "alice")
    answer = client.get(with_query(callback, state="a-state-of-another-session"))
    assert_refused(client, answer, "state")
    assert not User.objects.filter(email="alice@example.org").exists()


@pytest.mark.security
@pytest.mark.parametrize(
    "tamper, reason",
    [
        ("audience", "audience"),
        ("expired", "expired"),
        ("foreign-key", "signature"),
        ("none", "signature"),
        ("hmac", "signature"),
        ("nonce", "nonce"),
    ],
)
def test_a_forged_or_misdirected_id_token_is_refused(client, start_provider, tamper, reason):
    start_provider("corp", {"alice": ALICE}, tamper=tamper)
    answer = sign_in(client, "corp", "alice")
    assert_refused(client, answer, reason)
    assert not User.objects.filter(email="alice@example.org").exists()


@pytest.mark.security
def test_a_provider_user_named_like_a_local_account_never_gets_it(client, start_provider, bob):
    start_provider("corp", {"mallory": {"preferred_username": "bob", "name": "Not Bob"}})
    sign_in(client, "corp", "mallory")
    mallory = signed_in_user(client)
    assert mallory is not None and mallory != bob and mallory.username != "bob"
    assert not SocialAccount.objects.filter(user=bob).exists()


@pytest.fixture
def carol(make_user):
    return make_user("carol", email="carol@example.org")


CAROL_AT_PROVIDER = {"mallory": {"email": "carol@example.org", "email_verified": True}}


@pytest.mark.security
def test_an_address_alone_never_takes_over_an_account_by_default(client, start_provider, carol):
    start_provider("corp", CAROL_AT_PROVIDER)
    answer = sign_in(client, "corp", "mallory")
    assert_refused(client, answer, "link refused: linking by e-mail is off")
    assert not SocialAccount.objects.exists()


@pytest.mark.security
@pytest.mark.parametrize(
    "claims, account, reason",
    [
        ({"email_verified": False}, {}, "the provider did not verify"),
        ({}, {}, "the account has a password"),
        ({}, {"is_staff": True, "unusable": True}, "staff accounts are never linked"),
    ],
)
def test_linking_by_address_is_refused_unless_every_rule_holds(
    client, start_provider, carol, claims, account, reason
):
    carol.is_staff = account.get("is_staff", False)
    if account.get("unusable"):
        carol.set_unusable_password()
    carol.save()
    start_provider("corp", {"mallory": {**CAROL_AT_PROVIDER["mallory"], **claims}}, email_authentication=True)
    answer = sign_in(client, "corp", "mallory")
    assert_refused(client, answer, f"link refused: {reason}")
    assert not SocialAccount.objects.exists()


def test_an_account_made_for_single_sign_on_links_by_verified_address_where_allowed(
    client, start_provider, carol
):
    carol.set_unusable_password()
    carol.save()
    start_provider(
        "corp",
        {"carol-at-corp": {"email": "carol@example.org", "email_verified": True}},
        email_authentication=True,
    )
    sign_in(client, "corp", "carol-at-corp")
    assert signed_in_user(client) == carol
    assert SocialAccount.objects.get(user=carol).uid == "carol-at-corp"
    assert AuditEvent.objects.filter(action="sso.account_linked", object_id=str(carol.pk)).exists()


def test_a_deactivated_account_is_refused_at_its_next_provider_sign_in(client, start_provider):
    start_provider("corp", {"alice": ALICE})
    sign_in(client, "corp", "alice")
    user = signed_in_user(client)
    client.logout()
    User.objects.filter(pk=user.pk).update(is_active=False)
    answer = sign_in(client, "corp", "alice")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/inactive/"
    assert signed_in_user(client) is None and "the account is inactive" in refusals()
