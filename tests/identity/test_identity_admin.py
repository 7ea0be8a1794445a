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
