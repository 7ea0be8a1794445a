"""OIDC_PROVIDERS: each provider becomes one of allauth's apps; a mistake stops the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.base.identity import SAML_FORCED_ADVANCED, oidc_apps_from_env, saml_apps_from_env

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


# SAML_PROVIDERS

OKTA = {
    "slug": "okta",
    "name": "Okta",
    "metadata_url": "https://acme.okta.com/app/exk1/sso/saml/metadata",
    "entity_id": "http://www.okta.com/exk1",
}


def saml_apps_from(monkeypatch, value, taken=()) -> list[dict]:
    monkeypatch.setenv("SAML_PROVIDERS", value if isinstance(value, str) else json.dumps(value))
    return saml_apps_from_env(taken_ids=taken)


def test_unset_means_no_saml_provider(monkeypatch):
    monkeypatch.delenv("SAML_PROVIDERS", raising=False)
    assert saml_apps_from_env() == []


def test_a_saml_provider_becomes_an_allauth_app_with_the_safe_settings(monkeypatch):
    [app] = saml_apps_from(monkeypatch, [{**OKTA, "jit": False}])
    assert app["provider_id"] == app["client_id"] == "okta" and app["name"] == "Okta"
    assert app["settings"] == {
        "idp": {"metadata_url": OKTA["metadata_url"], "entity_id": OKTA["entity_id"]},
        "groups_attribute": "groups",
        "email_verified": False,
        "email_authentication": False,
        "advanced": SAML_FORCED_ADVANCED,
        "jit": False,
    }


def test_the_metadata_may_come_from_a_file(monkeypatch, tmp_path):
    from tests.identity.saml_idp import SamlIdp

    metadata = tmp_path / "idp.xml"
    idp = SamlIdp(tmp_path, {}, port=8443)
    metadata.write_text(idp.metadata())
    entry = {"slug": "corp", "metadata_file": str(metadata), "attribute_mapping": {"email": "mail"}}
    [app] = saml_apps_from(monkeypatch, [entry])
    assert app["settings"]["idp"] == {
        "entity_id": idp.entity_id,
        "sso_url": f"{idp.url}/sso/redirect",
        "x509cert": idp.keys.cert_base64,
    }
    assert app["settings"]["attribute_mapping"] == {"email": ["mail"]}


@pytest.mark.parametrize(
    "value, taken",
    [
        ("not json", ()),
        ([{**OKTA, "slug": "Bad Slug"}], ()),
        ([{**OKTA, "metadata_url": "http://acme.okta.com/metadata"}], ()),  # metadata in the clear
        ([{k: v for k, v in OKTA.items() if k != "entity_id"}], ()),
        ([{k: v for k, v in OKTA.items() if k != "metadata_url"}], ()),
        ([{**OKTA, "metadata_file": "/nonexistent.xml"}], ()),
        ([{k: v for k, v in OKTA.items() if k != "metadata_url"} | {"metadata_file": "/etc/hostname"}], ()),
        ([{**OKTA, "want_assertion_signed": False}], ()),
        ([{**OKTA, "attribute_mapping": {"email_verified": "verified"}}], ()),
        ([{**OKTA, "email_verified": "yes"}], ()),
        ([OKTA, OKTA], ()),
        ([OKTA], ("okta",)),  # an OpenID Connect provider's id already
    ],
)
def test_a_saml_mistake_stops_the_process(monkeypatch, value, taken):
    with pytest.raises(ImproperlyConfigured):
        saml_apps_from(monkeypatch, value, taken)


def backends_with(**environment) -> list[str]:
    """AUTHENTICATION_BACKENDS as config.settings builds them in a fresh process under ``environment``."""
    script = "from django.conf import settings; print(','.join(settings.AUTHENTICATION_BACKENDS))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **environment}
    env = {name: value for name, value in env.items() if value != ""}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1].split(",")


def test_the_directory_backend_is_on_only_with_a_directory():
    assert "accounts.backends.DirectoryBackend" not in backends_with(AUTH_LDAP_SERVER_URI="")
    with_directory = backends_with(
        AUTH_LDAP_SERVER_URI="ldaps://ldap.example.org",
        AUTH_LDAP_USER_SEARCH_BASE="ou=people,dc=example,dc=org",
    )
    assert with_directory[-1] == "accounts.backends.DirectoryBackend"
