"""Fixtures of the identity tests: test OpenID and SAML providers started on demand, configured
as the product's providers for the test (as OIDC_PROVIDERS and SAML_PROVIDERS would)."""

from __future__ import annotations

import contextlib
import json

import pytest
from django.contrib.auth.models import Group, User

from accounts.models import AuditEvent, TeamMapping
from config.base.identity import saml_apps_from_env
from tests.identity.oidc_provider import oidc_provider
from tests.identity.saml_idp import OUR_HOST, saml_idp

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


ALICE_SAML = {
    "uid": ["alice"],
    "mail": ["alice@example.org"],
    "givenName": ["Alice"],
    "groups": ["engineering", "sales"],
}
# Where the test provider's attributes go (what an operator writes in SAML_PROVIDERS): the provider
# sends them under their LDAP OIDs (uid, mail, givenName), as Keycloak or Shibboleth do.
UID_OID = "urn:oid:0.9.2342.19200300.100.1.1"
SAML_ATTRIBUTES = {
    "uid": UID_OID,
    "email": "urn:oid:0.9.2342.19200300.100.1.3",
    "first_name": "urn:oid:2.5.4.42",
    "username": UID_OID,
}


UNSAFE_ADVANCED = {
    "want_assertion_signed": False,
    "strict": False,
    "reject_idp_initiated_sso": False,
    "reject_deprecated_algorithm": False,
}


@pytest.fixture
def start_saml(tmp_path, settings, client, monkeypatch):
    """start_saml(users, slug="corp", metadata="url" or "file", unsafe=False, **entry) -> SamlIdp: a
    running SAML provider, configured through SAML_PROVIDERS with ``entry``'s keys added (and, when
    ``unsafe``, the unsafe advanced settings written over the safe ones), and knowing the product
    from the service-provider metadata the product serves."""
    stack = contextlib.ExitStack()
    apps = []
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, OUR_HOST]
    client.defaults["HTTP_HOST"] = OUR_HOST
    settings.SOCIALACCOUNT_PROVIDERS = {
        **settings.SOCIALACCOUNT_PROVIDERS,
        "saml": {**settings.SOCIALACCOUNT_PROVIDERS["saml"], "APPS": apps},
    }
    entries = []

    def start(users: dict, slug: str = "corp", metadata: str = "url", unsafe: bool = False, **entry):
        directory = tmp_path / f"saml-{slug}"
        directory.mkdir()
        idp = stack.enter_context(saml_idp(directory, users))
        entry = {"slug": slug, "name": f"Test {slug}", "attribute_mapping": SAML_ATTRIBUTES, **entry}
        entry = {key: value for key, value in entry.items() if value is not None}  # None: allauth's default
        if metadata == "url":
            entry |= {"metadata_url": idp.entity_id, "entity_id": idp.entity_id}
        else:
            (directory / "idp-metadata.xml").write_text(idp.metadata())
            entry["metadata_file"] = str(directory / "idp-metadata.xml")
        entries.append(entry)
        monkeypatch.setenv("SAML_PROVIDERS", json.dumps(entries))
        apps[:] = saml_apps_from_env()
        if unsafe:  # as an app made elsewhere might say: the provider class must not listen
            apps[-1]["settings"]["advanced"] = UNSAFE_ADVANCED
        served = client.get(f"/accounts/saml/{slug}/metadata/")
        assert served.status_code == 200 and served["Content-Type"].startswith("text/xml"), served.content
        idp.trust(served.content)
        return idp

    with stack:
        yield start


def mapped_team(source: str) -> Group:
    """The team Engineering, which the provider ``source``'s group "engineering" maps to."""
    team = Group.objects.create(name="Engineering")
    TeamMapping.objects.create(source=source, external_group="engineering", team=team)
    return team


def signed_in_user(client):
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id) if user_id else None


def refusals(action: str = "sso.login_refused") -> list[str]:
    """The reasons of the refused sign-ins, as the audit log records them under ``action``."""
    return [event.changes["reason"][1] for event in AuditEvent.objects.filter(action=action)]
