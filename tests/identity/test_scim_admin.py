"""SCIM tokens made in the admin: the secret shown once on the page after saving, only its hash
stored, recorded once, and revoked by the list's action; the SCIM link lists render."""

from __future__ import annotations

import re

import pytest

from accounts.models import AuditEvent, ScimToken
from accounts.scim.tokens import scim_token_authenticate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    [
        "/admin/accounts/scimtoken/",
        "/admin/accounts/scimtoken/add/",
        "/admin/accounts/scimaccount/",
        "/admin/accounts/scimgroup/",
    ],
)
def test_the_scim_admin_pages_render(admin_client, path):
    assert admin_client.get(path).status_code == 200


def test_a_token_made_in_the_admin_shows_its_secret_once(admin_client):
    answer = admin_client.post("/admin/accounts/scimtoken/add/", {"name": "Entra ID", "source": "entra"})
    assert answer.status_code == 200 and "no-store" in answer["Cache-Control"]
    secret = re.search(r'value="(scim_[^"]+)"', answer.content.decode()).group(1)
    token = ScimToken.objects.get()
    assert token.source == "entra" and secret.startswith(token.prefix) and secret not in token.key_hash
    assert scim_token_authenticate(secret) == token
    assert secret not in admin_client.get(f"/admin/accounts/scimtoken/{token.pk}/change/").content.decode()
    events = AuditEvent.objects.filter(object_type="accounts.scimtoken")
    assert [event.action for event in events] == ["scim_token.created"]
    assert secret not in str(events[0].changes)


def test_the_revoke_action_ends_a_token(admin_client):
    admin_client.post("/admin/accounts/scimtoken/add/", {"name": "Okta", "source": "okta"})
    token = ScimToken.objects.get()
    form = {"action": "revoke_tokens", "_selected_action": [token.pk]}
    assert admin_client.post("/admin/accounts/scimtoken/", form).status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(action="scim_token.revoked").count() == 1
