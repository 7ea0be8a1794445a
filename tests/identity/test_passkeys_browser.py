"""Passkeys in a real headless Chromium, with the DevTools WebAuthn domain's virtual authenticator
(a platform authenticator holding discoverable credentials, that verifies its user).

The live server is reached as http://localhost: WebAuthn needs a secure context, and localhost is
one; its relying-party ID is the public address's host name (accounts/mfa.py), "localhost" here.
The pages run allauth's WebAuthn JavaScript under the site's Content-Security-Policy; a console
message about the policy fails the test."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlencode

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from django.contrib.auth.models import User
from fido2.utils import websafe_encode

from accounts.models import AuditEvent
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import DESKTOP

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
chromium = test_pages_ux.chromium  # one Chromium for the module

AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


@pytest.fixture
def site(live_server, settings):
    assert live_server.url.startswith("http://localhost:")
    settings.KNOWLEDGE_PUBLIC_URL = live_server.url
    return live_server.url


def browser_with_authenticator(chromium):
    """A page whose browser context has one virtual authenticator; the page and the list of
    Content-Security-Policy complaints in its console."""
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})
    blocked = []
    page.on(
        "console",
        lambda message: blocked.append(message.text) if "Content Security" in message.text else None,
    )
    return page, blocked


def log_out(page) -> None:
    page.click("form.who button")
    page.wait_for_url(re.compile(r".*/accounts/login/$"))


def passkey_signed_up(page, site: str, username: str) -> None:
    """Signs up ``username`` with a passkey, from the sign-up page, and waits until signed in and
    shown the account's recovery codes."""
    page.goto(f"{site}/accounts/signup/")
    page.click("#passkey-signup-link")
    page.fill("input[name=username]", username)
    page.fill("input[name=email]", f"{username}@example.org")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/accounts/signup/passkey/create/$"))
    page.click("#passkey-signup")
    page.wait_for_url(re.compile(r".*/accounts/2fa/recovery-codes/$"))
    assert username in page.inner_text("header")
    assert "Keep these recovery codes somewhere safe" in page.inner_text("main")


def test_a_passkey_sign_up_shows_recovery_codes_that_sign_in_after_a_reset(chromium, site, mailoutbox):
    """A lost passkey is not a lost account: the address gets a reset, the new password signs in
    with a recovery code shown at sign-up as the second factor."""
    page, _ = browser_with_authenticator(chromium)
    passkey_signed_up(page, site, "fred")
    fred = User.objects.get(username="fred")
    codes = RecoveryCodes(Authenticator.objects.get(user=fred, type="recovery_codes")).get_unused_codes()
    assert len(codes) == 10 and page.input_value("main textarea").split() == codes
    log_out(page)
    page.goto(f"{site}/accounts/password/reset/")
    page.fill("input[name=email]", "fred@example.org")
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r".*/accounts/password/reset/done/$"))
    (sent,) = mailoutbox
    page.goto(re.search(rf"{re.escape(site)}/accounts/reset/\S+/", sent.body).group(0))
    page.fill("input[name=new_password1]", "A-new-pass-for-Fred-7")
    page.fill("input[name=new_password2]", "A-new-pass-for-Fred-7")
    page.click("main button[type=submit]")
    page.goto(f"{site}/accounts/login/")
    page.fill("input[name=username]", "fred")
    page.fill("input[name=password]", "A-new-pass-for-Fred-7")
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/accounts/2fa/authenticate/$"))
    page.fill("input[name=code]", codes[0])
    page.click("main form button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/$"))
    assert "fred" in page.inner_text("header")


def test_a_passkey_sign_up_then_a_passkey_sign_in(chromium, site):
    page, blocked = browser_with_authenticator(chromium)
    passkey_signed_up(page, site, "dora")
    dora = User.objects.get(username="dora")
    assert (
        not dora.has_usable_password()
        and Authenticator.objects.filter(user=dora, type="webauthn").count() == 1
    )
    log_out(page)
    page.click("#passkey_login")
    page.wait_for_url(re.compile(r".*/collections/$"))
    assert "dora" in page.inner_text("header") and blocked == []
    login = AuditEvent.objects.get(action="mfa.login")
    assert login.object_repr == "dora" and login.changes["method"] == [None, "passkey"]


def test_a_passkey_is_a_local_sign_in_refused_while_local_log_in_is_off(chromium, site, settings):
    page, _ = browser_with_authenticator(chromium)
    passkey_signed_up(page, site, "dora")
    log_out(page)
    settings.LOCAL_LOGIN_ENABLED = False  # after the page showed its passkey button
    page.click("#passkey_login")
    page.wait_for_selector(".flash.error")
    assert "dora" not in page.inner_text("header")
    refused = AuditEvent.objects.get(action="auth.local_login_refused")
    assert refused.object_repr == "dora" and refused.changes["method"] == [None, "passkey"]


def test_a_security_key_as_the_second_factor_after_the_password(chromium, site, alice):
    page, blocked = browser_with_authenticator(chromium)
    page.goto(f"{site}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice")
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/$"))
    page.goto(f"{site}/accounts/2fa/webauthn/add/")
    page.fill("input[name=password]", "pw-alice")  # allauth asks for the password again first
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r".*/accounts/2fa/webauthn/add/$"))
    page.click("#mfa_webauthn_add")
    page.wait_for_url(re.compile(r".*/accounts/2fa/recovery-codes/$"))  # first factor: codes made too
    log_out(page)
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice")
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/accounts/2fa/authenticate/$"))
    page.click("#mfa_webauthn_authenticate")
    page.wait_for_url(re.compile(r".*/collections/$"))
    assert "alice" in page.inner_text("header") and blocked == []
    assert AuditEvent.objects.get(action="mfa.login").changes["method"] == [None, "webauthn"]


def test_a_passkey_of_another_site_does_not_sign_in_here(chromium, site, settings):
    """The authenticator holds a passkey for "localhost"; this site now says it is "example.org":
    the browser refuses the ceremony, and a hand-made answer would fail the server's RP ID check."""
    page, blocked = browser_with_authenticator(chromium)
    page.goto(f"{site}/accounts/signup/passkey/")
    page.fill("input[name=username]", "erin")
    page.fill("input[name=email]", "erin@example.org")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/accounts/signup/passkey/create/$"))
    settings.KNOWLEDGE_PUBLIC_URL = "https://example.org"
    page.reload()
    with page.expect_console_message(lambda message: message.type == "error") as refused:
        page.click("#passkey-signup")
    assert "SecurityError" in refused.value.text or "relying party ID" in refused.value.text, (
        refused.value.text
    )
    assert page.url.endswith("/accounts/signup/passkey/create/")
    assert not User.objects.filter(username="erin").exists()


@pytest.mark.security
def test_a_passkey_presented_as_another_users_is_refused(chromium, site):
    """A passkey's answer names its account in userHandle, which the signature does not cover: one
    rewritten to name another account must not sign into it (its credential is not that account's)."""
    erin_page, _ = browser_with_authenticator(chromium)
    passkey_signed_up(erin_page, site, "erin")
    erin = User.objects.get(username="erin")
    page, _ = browser_with_authenticator(chromium)
    passkey_signed_up(page, site, "dora")
    log_out(page)

    def as_erin(route):
        fields = parse_qs(route.request.post_data)
        credential = json.loads(fields["credential"][0])
        credential["response"]["userHandle"] = websafe_encode(str(erin.pk).encode())
        fields["credential"] = [json.dumps(credential)]
        route.continue_(post_data=urlencode(fields, doseq=True))

    page.route(
        re.compile(r".*/accounts/2fa/webauthn/login/$"),
        lambda route: as_erin(route) if route.request.method == "POST" else route.continue_(),
    )
    page.click("#passkey_login")
    page.wait_for_selector(".flash.error")
    assert "erin" not in page.inner_text("header") and "dora" not in page.inner_text("header")
    refused = AuditEvent.objects.get(action="mfa.login_refused")
    assert refused.changes["reason"] == [None, "passkey not accepted"]
