"""API tokens: the service, the Bearer authentication, the API endpoints and the tokens page."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.api_tokens import token_authenticate, token_create, token_revoke
from accounts.models import ApiToken
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db


def test_lifecycle_created_used_listed_without_secret_revoked(anon, alice):
    response = anon.post(
        "/api/v1/auth/token/", {"username": "alice", "password": "pw-alice", "name": "laptop"}, format="json"
    )
    assert response.status_code == 201
    secret = response.json()["token"]
    assert response.json()["name"] == "laptop" and secret.startswith("kn_")

    stored = ApiToken.objects.get(user=alice)
    assert stored.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in {stored.name, stored.prefix, stored.key_hash} and secret.startswith(stored.prefix)
    assert stored.last_used_at is None

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/collections/").status_code == 200
    stored.refresh_from_db()
    assert stored.last_used_at is not None

    listed = client.get("/api/v1/tokens/").json()
    assert listed["count"] == 1
    row = listed["results"][0]
    assert row["name"] == "laptop" and row["prefix"] == stored.prefix and row["is_revoked"] is False
    assert "token" not in row and "key_hash" not in row and secret not in str(listed)

    assert client.delete(f"/api/v1/tokens/{stored.pk}/").status_code == 204
    refused = client.get("/api/v1/collections/")
    assert_error(refused, 401, "authentication_failed")
    assert refused["WWW-Authenticate"].startswith("Bearer")
    assert ApiToken.objects.get(pk=stored.pk).revoked_at is not None


def test_create_through_the_api_shows_the_secret_once(bearer, alice):
    client = bearer(alice)
    response = client.post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "ci" and body["token"].startswith(body["prefix"])
    assert token_authenticate(body["token"]) == alice
    detail_free = client.get("/api/v1/tokens/").json()["results"]
    assert {row["name"] for row in detail_free} == {"ci", "tests"}
    assert body["token"] not in str(detail_free)


def test_wrong_credentials_and_bad_tokens_are_refused(anon, alice):
    wrong = anon.post("/api/v1/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert "password" in assert_error(wrong, 401, "not_authenticated")["message"]
    assert wrong["WWW-Authenticate"] == 'Bearer realm="api"'  # a 401 names its challenge
    missing = anon.post("/api/v1/auth/token/", {"username": "alice"}, format="json")
    assert "password" in assert_error(missing, 400)["fields"]
    assert not ApiToken.objects.exists()

    assert_error(anon.get("/api/v1/collections/"), 401, "not_authenticated")
    for header in ["Bearer kn_not-a-real-token", "Bearer", "Bearer a b", "Bearer \u00e9t\u00e9"]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        assert_error(client.get("/api/v1/collections/"), 401)


def test_inactive_users_tokens_stop_working(alice):
    _, secret = token_create(user=alice, name="x")
    assert token_authenticate(secret) == alice
    alice.is_active = False
    alice.save()
    assert token_authenticate(secret) is None


def test_only_own_tokens_can_be_revoked(bearer, alice, charlie):
    token, secret = token_create(user=alice, name="alice's")
    as_charlie = bearer(charlie)
    assert_error(as_charlie.delete(f"/api/v1/tokens/{token.pk}/"), 404, "not_found")
    assert token_authenticate(secret) == alice
    assert [t["name"] for t in as_charlie.get("/api/v1/tokens/").json()["results"]] == ["tests"]


def test_last_used_is_written_at_most_once_a_minute(alice):
    token, secret = token_create(user=alice, name="busy")
    token_authenticate(secret)
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    token_authenticate(secret)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first

    earlier = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=earlier)
    token_authenticate(secret)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > earlier + timedelta(minutes=1)


def test_token_names_are_required_and_bounded(bearer, alice):
    client = bearer(alice)
    assert "name" in assert_error(client.post("/api/v1/tokens/", {}, format="json"), 400)["fields"]
    too_long = client.post("/api/v1/tokens/", {"name": "x" * 101}, format="json")
    assert "name" in assert_error(too_long, 400)["fields"]
    assert_error(client.post("/api/v1/tokens/", {"name": ["a"]}, format="json"), 400)


def test_session_authentication_works_and_needs_csrf_for_writes(alice):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.get("/api/v1/collections/").status_code == 200
    refused = client.post("/api/v1/collections/", {"name": "via session"}, format="json")
    assert "CSRF" in assert_error(refused, 403, "permission_denied")["message"]


# The server-rendered tokens page.


def _page_client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _csrf(client: Client) -> str:
    client.get("/accounts/tokens/")
    return client.cookies["csrftoken"].value


def test_page_requires_login(client):
    response = client.get("/accounts/tokens/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_page_creates_shows_the_secret_once_lists_and_revokes(alice):
    client = _page_client(alice)
    csrf = _csrf(client)
    created = client.post("/accounts/tokens/", {"name": "laptop", "csrfmiddlewaretoken": csrf})
    assert created.status_code == 200
    token = ApiToken.objects.get(user=alice)
    secret = created.context["new_secret"]
    assert secret in created.content.decode() and secret.startswith(token.prefix)
    assert "no-cache" in created["Cache-Control"] or "max-age=0" in created["Cache-Control"]

    page = client.get("/accounts/tokens/").content.decode()
    assert "laptop" in page and token.prefix in page and "never" in page
    assert secret not in page
    assert token_authenticate(secret) == alice
    used = client.get("/accounts/tokens/").content.decode()
    assert "never" not in used and used.count(f"{timezone.now():%Y-%m-%d}") == 2  # created and last used

    assert client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 403  # no CSRF token
    assert token_authenticate(secret) == alice
    revoked = client.post(f"/accounts/tokens/{token.pk}/revoke/", {"csrfmiddlewaretoken": csrf})
    assert revoked.status_code == 302 and revoked["Location"] == "/accounts/tokens/"
    assert token_authenticate(secret) is None
    assert "revoked" in client.get("/accounts/tokens/").content.decode()


def test_page_shows_only_own_tokens_and_refuses_others_revocations(alice, charlie):
    token, secret = token_create(user=alice, name="alice-laptop")
    client = _page_client(charlie)
    assert "alice-laptop" not in client.get("/accounts/tokens/").content.decode()
    response = client.post(f"/accounts/tokens/{token.pk}/revoke/", {"csrfmiddlewaretoken": _csrf(client)})
    assert response.status_code == 404
    assert token_authenticate(secret) == alice


def test_page_reports_a_missing_name(alice):
    client = _page_client(alice)
    response = client.post("/accounts/tokens/", {"name": " ", "csrfmiddlewaretoken": _csrf(client)})
    assert response.status_code == 400 and "needs a name" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoking_twice_keeps_the_first_time(alice):
    token, _ = token_create(user=alice, name="x")
    first = token_revoke(user=alice, token_id=token.pk).revoked_at
    assert token_revoke(user=alice, token_id=token.pk).revoked_at == first
