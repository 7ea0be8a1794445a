"""A real headless Chromium signs in with the "Sign in with ..." button: the browser enforces the
log-in page's Content-Security-Policy on the redirect after the button's form is sent, which the
test client does not, so only this test shows that the provider's origin is allowed."""

from __future__ import annotations

import re

import pytest

from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import DESKTOP
from tests.identity.conftest import ALICE
from tests.identity.oidc_provider import oidc_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
chromium = test_pages_ux.chromium  # one Chromium for the module


def test_the_sign_in_button_takes_a_browser_through_the_provider_and_back(
    chromium, live_server, tmp_path, settings
):
    with oidc_provider(tmp_path, "corp", {"alice": ALICE}, our_origin=live_server.url) as provider:
        openid = settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]
        settings.SOCIALACCOUNT_PROVIDERS = {"openid_connect": {**openid, "APPS": [provider.app()]}}
        page = chromium.new_context(viewport=DESKTOP).new_page()
        blocked = []
        page.on(
            "console",
            lambda message: blocked.append(message.text) if "Content Security" in message.text else None,
        )
        page.goto(f"{live_server.url}/accounts/login/")
        page.click("text=Sign in with Test corp")
        page.wait_for_url(re.compile(rf"^{re.escape(provider.issuer)}/interaction/"))
        page.fill("input[name=login]", "alice")
        page.fill("input[name=password]", "any")
        page.click("button[type=submit]")
        page.click("text=Continue")
        page.wait_for_url(re.compile(r".*/collections/$"))
        assert "alice" in page.inner_text("header") and blocked == []
