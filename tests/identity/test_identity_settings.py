"""OIDC_PROVIDERS: each provider becomes one of allauth's apps; a mistake stops the process."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.base.identity import oidc_apps_from_env

KEYCLOAK = {
    "id": "keycloak",
    "name": "Keycloak",
    "issuer": "https://sso.example.com/realms/staff/",
    "client_id": "knowledge",
    "client_secret": "s3cret",
    "scopes": ["openid", "email", "profile", "groups"],
    "jit": False,
}


def apps_from(monkeypatch, value) -> list[dict]:
    monkeypatch.setenv("OIDC_PROVIDERS", value if isinstance(value, str) else json.dumps(value))
    return oidc_apps_from_env()


def test_unset_means_no_provider(monkeypatch):
    monkeypatch.delenv("OIDC_PROVIDERS", raising=False)
    assert oidc_apps_from_env() == []


def test_a_provider_becomes_an_allauth_app_with_pkce_and_its_settings(monkeypatch):
    [app] = apps_from(monkeypatch, [KEYCLOAK])
    assert app["provider_id"] == "keycloak" and app["client_id"] == "knowledge" and app["secret"] == "s3cret"
    assert app["settings"] == {
        "server_url": "https://sso.example.com/realms/staff",
        "scope": ["openid", "email", "profile", "groups"],
        "token_auth_method": "client_secret_post",
        "groups_claim": "groups",
        "email_authentication": False,
        "oauth_pkce_enabled": True,
        "jit": False,
    }


def test_the_secret_may_come_from_a_file(monkeypatch, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    entry = {**KEYCLOAK, "client_secret_file": str(secret)}
    del entry["client_secret"]
    assert apps_from(monkeypatch, [entry])[0]["secret"] == "from-a-file"


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        {"id": "x"},
        [{**KEYCLOAK, "isuer": "typo"}],
        [{k: v for k, v in KEYCLOAK.items() if k != "client_id"}],
        [{**KEYCLOAK, "issuer": "sso.example.com"}],
        [{**KEYCLOAK, "id": "Bad Id"}],
        [{**KEYCLOAK, "scopes": ["email"]}],
        [{**KEYCLOAK, "jit": "yes"}],
        [{**KEYCLOAK, "token_auth_method": "private_key_jwt"}],
        [{**KEYCLOAK, "client_secret_file": "/nonexistent"}],
        [KEYCLOAK, KEYCLOAK],
    ],
)
def test_a_mistake_stops_the_process(monkeypatch, value):
    with pytest.raises(ImproperlyConfigured):
        apps_from(monkeypatch, value)
