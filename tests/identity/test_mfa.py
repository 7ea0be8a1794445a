"""Multi-factor authentication for local accounts: an authenticator app (TOTP) turned on and used
at sign-in (log-in page and admin), wrong and reused codes refused and audited, recovery codes,
MFA_REQUIRED, the API's password exchange, and the MFA pages in the site's layout."""

from __future__ import annotations

import time

import httpx2
import pyotp
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from accounts.mfa import mfa_setup_pending
from accounts.models import ApiToken, AuditEvent, DirectoryAccount, ScimAccount
from accounts.policy import MFA_REQUIRED_MESSAGE, policy_require_password_change
from tests.api.conftest import generous_throttles  # noqa: F401 (fixture, used by every test here)
from tests.identity.conftest import signed_in_user
from tests.identity.test_routes import in_our_layout
from tests.mcp import conftest as mcp_fixtures
from tests.served import served_mcp

pytestmark = pytest.mark.django_db
no_persistent_connections = mcp_fixtures.no_persistent_connections

TOKEN_URL = "/api/v1/auth/token/"
AUTHENTICATE_URL = "/accounts/2fa/authenticate/"


def code_now(secret: str, *, seconds_left: int = 10) -> str:
    """The app's current code, taken with at least ``seconds_left`` of its 30-second window to go
    (waiting for the next window if need be), so a test's codes all belong to one window."""
    while 30 - time.time() % 30 < seconds_left:
        time.sleep(0.2)
    return pyotp.TOTP(secret).now()


def with_app(user) -> str:
    """Turns an authenticator app on for ``user`` (as its activation page would); its secret."""
    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    return secret


def password_step(client, username: str, path: str = "/accounts/login/", **fields):
    return client.post(path, {"username": username, "password": f"pw-{username}", **fields})


def reauthenticated(client, username: str) -> None:
    """allauth asks for the password again before a factor is added or removed (a session left
    open must not be enough to change them)."""
    answer = client.post("/accounts/reauthenticate/", {"password": f"pw-{username}"})
    assert answer.status_code == 302, answer.content


def mfa_events(action: str) -> list[dict]:
    """{field: after} of each event ``action`` recorded, oldest first."""
    events = AuditEvent.objects.filter(action=action).order_by("at", "id")
    return [{name: values[1] for name, values in event.changes.items()} for event in events]


def test_the_authenticator_app_is_turned_on_from_the_mfa_page_and_its_first_code_is_spent(
    client, alice, django_capture_on_commit_callbacks
):
    assert password_step(client, "alice").status_code == 302  # no factor yet: signed in at once
    assert client.get("/accounts/2fa/totp/activate/").url.startswith("/accounts/reauthenticate/")
    reauthenticated(client, "alice")
    page = client.get("/accounts/2fa/totp/activate/")
    assert page.status_code == 200 and in_our_layout(page)
    secret = client.session["mfa.totp.secret"]
    code = code_now(secret)
    with django_capture_on_commit_callbacks(execute=True):  # allauth signals it after the commit
        assert client.post("/accounts/2fa/totp/activate/", {"code": code}).status_code == 302
    assert Authenticator.objects.filter(user=alice, type="totp").exists()
    assert [event["type"] for event in mfa_events("mfa.authenticator_added")] == ["totp", "recovery_codes"]
    client.post("/accounts/logout/")
    # The activation's code counts as used: it does not pass again at the next sign-in.
    assert password_step(client, "alice").url == AUTHENTICATE_URL
    client.post(AUTHENTICATE_URL, {"code": code})
    assert signed_in_user(client) is None
    assert mfa_events("mfa.login_refused")[-1] == {"method": "code", "reason": "reused code"}


def test_a_right_code_signs_in_only_after_the_password(client, alice):
    secret = with_app(alice)
    answer = password_step(client, "alice", next="/profiles/")
    assert answer.status_code == 302 and answer.url == AUTHENTICATE_URL
    assert signed_in_user(client) is None  # the password alone signs nobody in
    assert client.get("/collections/").status_code == 302
    step = client.get(AUTHENTICATE_URL)
    assert step.status_code == 200 and in_our_layout(step)
    answer = client.post(AUTHENTICATE_URL, {"code": code_now(secret)})
    assert answer.status_code == 302 and answer.url == "/profiles/"
    assert signed_in_user(client) == alice
    authenticator = alice.authenticator_set.get().pk
    assert mfa_events("mfa.login") == [{"type": "totp", "authenticator": authenticator, "method": "totp"}]


def test_a_wrong_code_is_refused_and_audited(client, alice):
    secret = with_app(alice)
    password_step(client, "alice")
    right = code_now(secret)
    wrong = f"{(int(right) + 1) % 1_000_000:06d}"
    answer = client.post(AUTHENTICATE_URL, {"code": wrong})
    assert answer.status_code == 200 and "Incorrect code" in answer.content.decode()
    assert signed_in_user(client) is None
    event = AuditEvent.objects.get(action="mfa.login_refused")
    assert event.object_repr == "alice" and event.changes["reason"] == [None, "wrong code"]


@pytest.mark.parametrize("cache", ["shared cache", "cache that keeps nothing"])
def test_a_code_used_once_is_refused_the_second_time(client, alice, settings, cache):
    if cache == "cache that keeps nothing":  # as a full cache that evicted allauth's mark
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    secret = with_app(alice)
    code = code_now(secret, seconds_left=15)
    password_step(client, "alice")
    client.post(AUTHENTICATE_URL, {"code": code})
    assert signed_in_user(client) == alice
    client.post("/accounts/logout/")
    # Someone who saw the code (over a shoulder, in a proxy's log) tries it within its window.
    other = Client()
    password_step(other, "alice")
    answer = other.post(AUTHENTICATE_URL, {"code": code})
    assert answer.status_code == 200 and signed_in_user(other) is None
    assert mfa_events("mfa.login_refused") == [{"method": "code", "reason": "reused code"}]


def test_a_recovery_code_signs_in_once(client, alice):
    with_app(alice)
    codes = RecoveryCodes.activate(alice).generate_codes()
    password_step(client, "alice")
    client.post(AUTHENTICATE_URL, {"code": codes[0]})
    assert signed_in_user(client) == alice
    assert mfa_events("mfa.recovery_code_used")[0]["left"] == len(codes) - 1
    client.post("/accounts/logout/")
    password_step(client, "alice")
    client.post(AUTHENTICATE_URL, {"code": codes[0]})
    assert signed_in_user(client) is None


def test_the_admin_log_in_asks_for_the_second_factor_too(client):
    operator = User.objects.create_user(username="sam", password="pw-sam", is_staff=True, is_superuser=True)
    secret = with_app(operator)
    answer = password_step(client, "sam", path="/admin/login/?next=/admin/", next="/admin/")
    assert answer.status_code == 302 and answer.url == AUTHENTICATE_URL
    assert signed_in_user(client) is None and client.get("/admin/").status_code == 302
    answer = client.post(AUTHENTICATE_URL, {"code": code_now(secret)})
    assert answer.url == "/admin/" and client.get("/admin/").status_code == 200


def test_the_api_password_exchange_refuses_an_account_with_a_second_factor(alice):
    with_app(alice)
    answer = APIClient().post(TOKEN_URL, {"username": "alice", "password": "pw-alice"}, format="json")
    assert answer.status_code == 403 and "API tokens page" in answer.json()["error"]["message"]
    assert not ApiToken.objects.filter(user=alice).exists()
    assert mfa_events("mfa.login_refused") == [
        {"method": "api password exchange", "reason": "second factor required"}
    ]


def test_wrong_codes_are_limited_per_account(client, alice):
    secret = with_app(alice)
    password_step(client, "alice")
    wrong = f"{(int(code_now(secret)) + 1) % 1_000_000:06d}"
    for _ in range(6):
        client.post(AUTHENTICATE_URL, {"code": wrong})
    reasons = [event["reason"] for event in mfa_events("mfa.login_refused")]
    assert reasons == ["wrong code"] * 5 + ["too many attempts"]


def test_a_token_made_on_the_tokens_page_still_works_for_an_account_with_a_second_factor(alice):
    with_app(alice)
    _, secret = token_create(user=alice, name="script")
    answer = APIClient().get("/api/v1/tokens/", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert answer.status_code == 200


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_user(username="sam", password="pw-sam", is_staff=True)


def test_required_for_staff_holds_an_operator_without_a_factor_at_the_mfa_pages(
    client, settings, operator, alice
):
    settings.MFA_REQUIRED = "staff"
    password_step(client, "sam")
    answer = client.get("/collections/")
    assert answer.status_code == 302 and answer.url == "/accounts/2fa/"
    assert client.get("/accounts/2fa/").status_code == 200
    reauthenticated(client, "sam")
    assert client.get("/accounts/2fa/totp/activate/").status_code == 200
    api = client.get("/api/v1/collections/")
    assert api.status_code == 403 and "second factor" in api.json()["error"]["message"]
    _, secret = token_create(user=operator, name="old script")
    bearer = APIClient().get("/api/v1/collections/", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert bearer.status_code == 403 and "second factor" in bearer.json()["error"]["message"]
    exchange = APIClient().post(TOKEN_URL, {"username": "sam", "password": "pw-sam"}, format="json")
    assert exchange.status_code == 403 and "second factor" in exchange.json()["error"]["message"]
    other = Client()
    password_step(other, "alice")  # not staff: not covered
    assert other.get("/collections/").status_code == 200


def test_required_for_staff_lets_the_operator_in_once_a_factor_is_added(client, settings, operator):
    settings.MFA_REQUIRED = "staff"
    password_step(client, "sam")
    reauthenticated(client, "sam")
    client.get("/accounts/2fa/totp/activate/")
    client.post("/accounts/2fa/totp/activate/", {"code": code_now(client.session["mfa.totp.secret"])})
    assert client.get("/collections/").status_code == 200


def provider_user(user):
    """``user`` as single sign-on makes one: linked to a provider, with no password of ours."""
    SocialAccount.objects.create(user=user, provider="corp", uid=user.username)
    user.set_unusable_password()
    user.save()
    return user


def test_required_for_all_covers_local_accounts_but_not_provider_or_directory_users(
    client, settings, alice, bob, charlie
):
    settings.MFA_REQUIRED = "all"
    provider_user(bob)
    DirectoryAccount.objects.create(user=charlie, dn="uid=charlie,dc=example,dc=org", username="charlie")
    for user, held in [(alice, True), (bob, False), (charlie, False)]:
        visitor = Client()
        visitor.force_login(user)
        answer = visitor.get("/collections/")
        assert (answer.status_code == 302 and answer.url == "/accounts/2fa/") is held, user


def test_required_for_all_asks_one_query_of_an_account_that_has_its_factor(settings, alice, bob):
    """The hold is asked on every request of every covered account: one that has set up its factor
    (the usual case) costs one query, not three."""
    settings.MFA_REQUIRED = "all"
    with_app(alice)
    with CaptureQueriesContext(connection) as asked:
        assert mfa_setup_pending(alice) is False
    assert len(asked) == 1
    assert mfa_setup_pending(bob) is True


@pytest.mark.security
def test_an_account_linked_to_a_provider_that_keeps_its_password_is_covered(client, settings, operator):
    """Its password still signs in on our log-in page, so linking it to a provider (by an operator,
    or by connecting one) must not take it out of MFA_REQUIRED."""
    settings.MFA_REQUIRED = "staff"
    SocialAccount.objects.create(user=operator, provider="corp", uid="sam")
    password_step(client, "sam")
    answer = client.get("/collections/")
    assert answer.status_code == 302 and answer.url == "/accounts/2fa/"
    reauthenticated(client, "sam")
    assert client.get("/accounts/2fa/totp/activate/").status_code == 200


def test_provider_users_may_not_add_a_factor_here(client, bob):
    provider_user(bob)
    client.force_login(bob)
    for path in ["/accounts/2fa/totp/activate/", "/accounts/2fa/webauthn/add/"]:
        answer = client.get(path)
        assert answer.status_code == 403 and "handles two-factor authentication" in answer.content.decode(), (
            path
        )


def test_the_mfa_pages_render_in_our_layout(client, alice):
    with_app(alice)
    client.force_login(alice)
    reauthenticated(client, "alice")
    for path in ["/accounts/2fa/", "/accounts/2fa/webauthn/", "/accounts/2fa/totp/deactivate/"]:
        answer = client.get(path)
        assert answer.status_code == 200 and in_our_layout(answer), path


def test_passkey_sign_up_follows_the_sign_up_rules(client, settings, alice):
    answer = client.post("/accounts/signup/passkey/", {"username": "ALICE", "email": "a@example.org"})
    assert answer.status_code == 200 and "already exists" in answer.content.decode()
    settings.LOCAL_LOGIN_ENABLED = False
    assert client.get("/accounts/signup/passkey/").status_code == 403
    assert client.get("/accounts/signup/passkey/create/").status_code == 302


def test_a_passkey_sign_up_creates_nothing_before_the_passkey(client):
    answer = client.post("/accounts/signup/passkey/", {"username": "dora", "email": "dora@example.org"})
    assert answer.status_code == 302 and answer.url == "/accounts/signup/passkey/create/"
    page = client.get("/accounts/signup/passkey/create/")
    assert page.status_code == 200 and "creation_options" in page.content.decode()
    assert not User.objects.filter(username="dora").exists()
    for forged in ['{"id": "forged"}', '{"id": "a", "rawId": "a", "response": {}, "type": "public-key"}']:
        answer = client.post("/accounts/signup/passkey/create/", {"credential": forged})
        assert answer.status_code == 200 and not User.objects.filter(username="dora").exists()


def test_a_malformed_passkey_answer_is_refused_not_an_error(client, alice):
    """fido2 raises KeyError on a credential without rawId; allauth would let it out as a 500."""
    client.get("/accounts/2fa/webauthn/login/", HTTP_ACCEPT="application/json")
    answer = client.post("/accounts/2fa/webauthn/login/", {"credential": '{"id": "forged"}'})
    assert answer.status_code == 302 and signed_in_user(client) is None
    assert mfa_events("mfa.login_refused") == [{"method": "passkey", "reason": "passkey not accepted"}]


def test_a_malformed_passkey_answer_asked_again_is_refused_not_an_error(client, alice):
    """The re-check before a factor is changed reads the same answer as the sign-in."""
    Authenticator.objects.create(user=alice, type=Authenticator.Type.WEBAUTHN, data={})
    client.force_login(alice)
    answer = client.post("/accounts/2fa/webauthn/reauthenticate/", {"credential": '{"id": "forged"}'})
    assert answer.status_code == 302 and answer.url == "/accounts/login/"
    assert mfa_events("mfa.login_refused") == [{"method": "passkey", "reason": "passkey not accepted"}]


@pytest.mark.security
@pytest.mark.django_db(transaction=True)  # the server's threads read the test's rows on their own connections
@pytest.mark.usefixtures("no_persistent_connections")
def test_required_for_staff_holds_an_operators_token_at_mcp_too(settings, operator):
    """MCP sits beside Django, out of reach of its middleware: a token made before MFA_REQUIRED
    covered the operator opens nothing there either, with the API's message."""
    settings.MFA_REQUIRED = "staff"
    _, secret = token_create(user=operator, name="assistant")
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with served_mcp() as url:
        refused = httpx2.post(url, json=body, headers=headers, timeout=30)
        assert refused.status_code == 403 and refused.json()["error"]["message"] == MFA_REQUIRED_MESSAGE
        settings.MFA_REQUIRED = "off"
        assert httpx2.post(url, json=body, headers=headers, timeout=30).status_code == 200


@pytest.mark.security
def test_a_password_reset_reaches_a_passkey_only_account_but_never_a_providers(client, make_user, mailoutbox):
    """A passkey sign-up's address is its way back in when the passkey is lost; an account a
    provider or SCIM made has no password either, and must never get one here."""
    for name in ["dora", "erin", "fay"]:
        user = make_user(name, email=f"{name}@example.org")
        user.set_unusable_password()
        user.save()
        Authenticator.objects.create(user=user, type=Authenticator.Type.WEBAUTHN, data={})
    provider_user(User.objects.get(username="erin"))
    ScimAccount.objects.create(user=User.objects.get(username="fay"), source="entra")
    for name in ["dora", "erin", "fay"]:
        answer = client.post("/accounts/password/reset/", {"email": f"{name.upper()}@example.org"})
        assert answer.status_code == 302
    assert [message.to for message in mailoutbox] == [["dora@example.org"]]


def test_an_operator_on_the_default_password_changes_it_and_then_adds_a_factor(client, settings, operator):
    """Two holds at once (the first start with MFA_REQUIRED=staff): one page at a time, never a loop
    between the password page and the MFA pages."""
    settings.MFA_REQUIRED = "staff"
    policy_require_password_change(user=operator)
    password_step(client, "sam")
    held = client.get("/collections/")
    assert held.status_code == 302 and held.url == "/accounts/password/change/"
    assert client.get("/accounts/password/change/").status_code == 200
    new = "A-fresh-pass-for-Sam-9"
    changed = client.post(
        "/accounts/password/change/",
        {"old_password": "pw-sam", "new_password1": new, "new_password2": new},
    )
    assert changed.status_code == 302, changed.content
    held = client.get("/collections/")
    assert held.status_code == 302 and held.url == "/accounts/2fa/"
    assert client.get("/accounts/2fa/").status_code == 200
