"""A new password can cut off every API token: on by default when changing it, always when resetting it."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from accounts.models import ApiToken

pytestmark = [pytest.mark.security, pytest.mark.django_db]

NEW_PASSWORD = "a-Fresh-passphrase-42"


def _api_status(secret: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client.get("/api/v1/collections/").status_code


def _change_password(client, **extra):
    fields = {"old_password": "pw-alice", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    return client.post("/accounts/password/change/", {**fields, **extra})


def test_changing_the_password_revokes_api_tokens_by_default(client, alice):
    _, laptop = token_create(user=alice, name="laptop")
    _, ci = token_create(user=alice, name="ci")
    client.force_login(alice)
    form = client.get("/accounts/password/change/").content.decode()
    checkbox = re.search(r"<input[^>]*name=\"revoke_api_tokens\"[^>]*>", form)
    assert checkbox and "checked" in checkbox.group(0)  # what a browser submits unless unticked

    response = _change_password(client, revoke_api_tokens="on")
    assert response.status_code == 302
    assert _api_status(laptop) == 401 and _api_status(ci) == 401
    assert not ApiToken.objects.filter(user=alice, revoked_at__isnull=True).exists()
    done = client.get(response["Location"], follow=True).content.decode()
    assert "2 API tokens were revoked" in done


def test_the_owner_may_keep_api_tokens_when_changing_the_password(client, alice, bob):
    _, kept = token_create(user=alice, name="laptop")
    _, bobs = token_create(user=bob, name="bob's")
    client.force_login(alice)
    assert _change_password(client).status_code == 302  # box unticked: the field is absent
    assert _api_status(kept) == 200
    assert _api_status(bobs) == 200  # never anyone else's


def test_resetting_the_password_always_revokes_api_tokens(client, make_user, mailoutbox):
    erin = make_user("erin", email="erin@example.com")
    _, secret = token_create(user=erin, name="laptop")
    client.post("/accounts/password/reset/", {"email": "erin@example.com"})
    link = re.search(r"https?://[^/\s]+(/accounts/reset/[^/\s]+/[^/\s]+/)", mailoutbox[0].body).group(1)
    form_url = client.get(link, follow=True).redirect_chain[-1][0]
    response = client.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302
    assert _api_status(secret) == 401
    assert "1 API token was revoked" in client.get(response["Location"]).content.decode()


def test_an_operator_setting_a_users_password_revokes_their_api_tokens(client, alice, django_user_model):
    _, secret = token_create(user=alice, name="laptop")
    operator = django_user_model.objects.create_superuser("operator", "op@example.com", "pw-operator")
    client.force_login(operator)
    response = client.post(
        f"/admin/auth/user/{alice.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert response.status_code == 302, response.content.decode()[:1000]
    assert _api_status(secret) == 401
