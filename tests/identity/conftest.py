"""Fixtures of the identity tests: test OpenID providers started on demand, configured as the
product's providers for the test (as OIDC_PROVIDERS would)."""

from __future__ import annotations

import contextlib

import pytest

from tests.identity.oidc_provider import oidc_provider

ALICE = {
    "email": "alice@example.org",
    "email_verified": True,
    "name": "Alice Liddell",
    "groups": ["engineering"],
}


@pytest.fixture
def start_provider(tmp_path, settings):
    """start_provider(provider_id, users, tamper="", **app_settings) -> TestProvider: a running
    provider, added to the product's OpenID Connect apps (several may run at once)."""
    stack = contextlib.ExitStack()
    apps = []
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {
            **settings.SOCIALACCOUNT_PROVIDERS["openid_connect"],
            "APPS": apps,
        }
    }

    def start(provider_id: str, users: dict, tamper: str = "", **app_settings):
        provider = stack.enter_context(oidc_provider(tmp_path, provider_id, users, tamper))
        apps.append(provider.app(**app_settings))
        return provider

    with stack:
        yield start
