"""The identity admin pages: team mappings, team grants, provider apps (their secret never in the
audit log) and the default-password flags."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialApp
from django.contrib.auth.models import Group

from accounts.models import AuditEvent, TeamMapping

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    [
        "/admin/accounts/teammapping/",
        "/admin/accounts/teammapping/add/",
        "/admin/accounts/teamgrant/",
        "/admin/accounts/accountpolicy/",
        "/admin/socialaccount/socialapp/",
        "/admin/socialaccount/socialapp/add/",
        "/admin/socialaccount/socialaccount/",
    ],
)
def test_the_identity_admin_pages_render(admin_client, path):
    assert admin_client.get(path).status_code == 200


def test_a_team_mapping_made_in_the_admin_is_recorded(admin_client):
    team = Group.objects.create(name="Engineering")
    form = {"source": "oidc:keycloak", "external_group": "engineering", "team": team.pk}
    assert admin_client.post("/admin/accounts/teammapping/add/", form).status_code == 302
    assert TeamMapping.objects.get().team == team
    assert AuditEvent.objects.filter(action="team_mapping.added").exists()


def test_a_provider_apps_secret_never_reaches_the_audit_log(admin_client):
    form = {
        "provider": "openid_connect",
        "provider_id": "keycloak",
        "name": "Keycloak",
        "client_id": "knowledge",
        "secret": "the-client-secret",
        "key": "",
        "settings": '{"server_url": "https://sso.example.com/realms/staff"}',
    }
    answer = admin_client.post("/admin/socialaccount/socialapp/add/", form)
    assert answer.status_code == 302, answer.content[:2000]
    assert SocialApp.objects.get().secret == "the-client-secret"
    event = AuditEvent.objects.get(object_type="socialaccount.socialapp")
    assert "the-client-secret" not in str(event.changes) and event.changes["secret"][1] == "(changed)"


def saml_form(**extra) -> dict:
    return {
        "provider": "saml",
        "provider_id": "",
        "name": "Corp SAML",
        "client_id": "corp",
        "secret": "",
        "key": "",
        "settings": '{"groups_attribute": "memberOf", "advanced": {"want_assertion_signed": false}}',
        **extra,
    }


def test_a_saml_app_made_in_the_admin_from_a_metadata_file_keeps_the_safe_settings(admin_client, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.identity.saml_idp import SamlIdp

    idp = SamlIdp(tmp_path, {}, port=8443)
    upload = SimpleUploadedFile("idp.xml", idp.metadata().encode(), content_type="text/xml")
    answer = admin_client.post("/admin/socialaccount/socialapp/add/", saml_form(idp_metadata_file=upload))
    assert answer.status_code == 302, answer.content[:3000]
    app = SocialApp.objects.get()
    assert app.provider_id == "corp" and app.settings["groups_attribute"] == "memberOf"
    assert app.settings["idp"]["entity_id"] == idp.entity_id
    assert app.settings["idp"]["sso_url"] == f"{idp.url}/sso/redirect"
    assert app.settings["advanced"]["want_assertion_signed"] is True


@pytest.mark.parametrize(
    "settings",
    [
        "{}",  # no provider at all
        '{"idp": {"metadata_url": "http://idp.example.org/metadata", "entity_id": "x"}}',  # in the clear
        '{"idp": {"metadata_url": "https://idp.example.org/metadata"}}',  # which entity?
    ],
)
def test_a_saml_app_without_a_usable_provider_is_not_saved(admin_client, settings):
    answer = admin_client.post("/admin/socialaccount/socialapp/add/", saml_form(settings=settings))
    assert answer.status_code == 200 and not SocialApp.objects.exists()


@pytest.mark.parametrize(
    "path", ["/admin/accounts/directoryaccount/", "/admin/accounts/directoryaccount/add/"]
)
def test_the_directory_account_pages_render(admin_client, path):
    assert admin_client.get(path).status_code == 200
