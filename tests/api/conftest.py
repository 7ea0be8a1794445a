"""API test fixtures: the API settings and URLs switched on, clients holding Bearer tokens."""

from __future__ import annotations

import copy

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from config.api_settings import REST_FRAMEWORK
from knowledge.services.collections import collection_create

RATES = {
    "uploads": "1000/minute",
    "writes": "1000/minute",
    "retrieve": "1000/minute",
    "syncs": "1000/minute",
    "auth": "1000/minute",
    "signup": "1000/minute",
    "password_reset": "1000/minute",
}


@pytest.fixture(autouse=True)
def generous_throttles(settings):
    """Throttle rates high enough for the tests (the throttling tests set their own)."""
    rest = copy.deepcopy(REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = dict(RATES)
    settings.REST_FRAMEWORK = rest
    cache.clear()  # a clean cache; the throttle counts are rows (RateCounter), reset with the test database
    yield
    cache.clear()


@pytest.fixture
def bearer():
    """An API client authenticated with a fresh token of ``user``."""

    def make(user) -> APIClient:
        _, secret = token_create(user=user, name="tests")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make


@pytest.fixture
def anon():
    return APIClient()


@pytest.fixture
def page(alice):
    """Alice signed in on the pages; errors are answered as responses, as a browser gets them."""
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    return client


@pytest.fixture
def api(bearer, alice):
    """Alice's API client; errors are answered as responses, as a client gets them."""
    client = bearer(alice)
    client.raise_request_exception = False
    return client


@pytest.fixture
def world(alice, bob, charlie):
    """Alice's private, unlisted and public collections, Bob's private one, an admin-owned one."""
    return {
        "private": collection_create(name="alice private", owner=alice, description="secret plans"),
        "unlisted": collection_create(name="alice unlisted", owner=alice, visibility="unlisted"),
        "public": collection_create(name="alice public", owner=alice, visibility="public", tags=["open"]),
        "bob": collection_create(name="bob private", owner=bob),
        "admin": collection_create(name="handbook", owner=None, description="company handbook"),
    }


def assert_error(response, status: int, code: str | None = None) -> dict:
    """The one error format: {"error": {"status", "code", "message", "fields"?}}."""
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert error["status"] == status
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert set(error) <= {"status", "code", "message", "fields"}
    if code is not None:
        assert error["code"] == code, error
    return error
