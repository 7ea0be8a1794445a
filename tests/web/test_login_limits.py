"""Password guessing is limited on every log-in path, per username at an address and per address.

The limit lives in the database, shared by every server process; the client's
address is REMOTE_ADDR unless the operator declares trusted proxies, so a
rotating X-Forwarded-For header resets nothing.
"""

from __future__ import annotations

import copy
import itertools
import re

import pytest
from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.core.cache import cache
from django.test import Client
from django.utils.module_loading import import_string
from rest_framework.test import APIClient

from accounts.client_address import client_address
from accounts.models import ApiToken

pytestmark = [pytest.mark.security, pytest.mark.django_db]

forwarded_for = (f"203.0.113.{n}" for n in itertools.count(1))  # a new "client" for every request


def _page_login(client: Client, path: str, username: str, password: str):
    return client.post(
        path, {"username": username, "password": password}, HTTP_X_FORWARDED_FOR=next(forwarded_for)
    )


def _api_login(client: APIClient, username: str, password: str):
    return client.post(
        "/api/v1/auth/token/",
        {"username": username, "password": password},
        format="json",
        HTTP_X_FORWARDED_FOR=next(forwarded_for),
    )


def test_the_client_address_is_remote_addr_unless_proxies_are_trusted(rf, settings):
    request = rf.get("/", REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR="203.0.113.9, 192.0.2.1")
    assert settings.TRUSTED_PROXY_COUNT == 0
    assert client_address(request) == "198.51.100.7"
    assert settings.REST_FRAMEWORK["NUM_PROXIES"] == 0  # DRF's throttles read the same setting
    settings.TRUSTED_PROXY_COUNT = 1  # one proxy: the address it saw is the last one it appended
    assert client_address(request) == "192.0.2.1"
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_address(request) == "203.0.113.9"
    settings.TRUSTED_PROXY_COUNT = 5  # fewer entries than proxies: the left-most one
    assert client_address(request) == "203.0.113.9"


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_page_logins_lock_after_the_limit_even_with_the_right_password(path, alice, django_user_model):
    if path.startswith("/admin/"):
        alice.is_staff = True
        alice.save()
    client = Client()
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        response = _page_login(client, path, "alice", "wrong")
        assert response.status_code == 200 and "_auth_user_id" not in client.session
    locked = _page_login(client, path, "alice", "wrong")
    assert locked.status_code == 429
    refused = _page_login(client, path, "alice", "pw-alice")
    assert refused.status_code == 429 and "_auth_user_id" not in client.session
    assert "Too many failed log-ins" in refused.content.decode()


@pytest.fixture
def auth_rate(settings):
    """Set the API's per-address request throttle on the token endpoint."""

    def set_rate(rate: str) -> None:
        rest = copy.deepcopy(settings.REST_FRAMEWORK)
        rest["DEFAULT_THROTTLE_RATES"]["auth"] = rate
        settings.REST_FRAMEWORK = rest
        cache.clear()

    yield set_rate
    cache.clear()


def test_the_token_endpoint_throttle_counts_by_connection_not_forwarded_header(alice, auth_rate):
    auth_rate("3/minute")
    client = APIClient()
    for _ in range(3):
        assert _api_login(client, "nobody", "wrong").status_code == 401
    assert _api_login(client, "nobody", "wrong").status_code == 429


def test_the_token_endpoint_locks_the_account_at_the_address_whatever_the_forwarded_header(alice, auth_rate):
    auth_rate("1000/minute")  # the log-in limit, not the request throttle, is under test here
    client = APIClient()
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        assert _api_login(client, "alice", "wrong").status_code == 401
    locked = _api_login(client, "alice", "wrong")
    refused = _api_login(client, "alice", "pw-alice")
    for response in (locked, refused):
        assert response.status_code == 429
        body = response.json()["error"]
        assert body["code"] == "throttled" and "Too many failed log-ins" in body["message"]
        assert int(response["Retry-After"]) > 0
    assert not ApiToken.objects.exists()
    # The account is locked at that address on every path, not only the one that was attacked.
    assert _page_login(Client(), "/accounts/login/", "alice", "pw-alice").status_code == 429


def test_guessing_across_usernames_from_one_address_is_locked_too(alice, bob, make_user):
    """Per address: one client trying a password against many accounts is stopped as well."""
    client = Client()
    limit = settings.AXES_FAILURE_LIMIT
    users = [make_user(f"user{n}") for n in range(limit)]
    for user in users:
        _page_login(client, "/accounts/login/", user.username, "Summer2026!")
    assert _page_login(client, "/accounts/login/", "bob", "pw-bob").status_code == 429
    assert _api_login(APIClient(), "bob", "pw-bob").status_code == 429
    other_address = Client(REMOTE_ADDR="198.51.100.20")
    response = other_address.post("/accounts/login/", {"username": "bob", "password": "pw-bob"})
    assert response.status_code == 302  # bob himself, from elsewhere, is not locked out


def test_limits_live_in_stores_every_server_process_shares():
    assert issubclass(import_string(settings.AXES_HANDLER), AxesDatabaseHandler)  # counts in the database
    backend = settings.CACHES["default"]["BACKEND"]  # DRF's request throttles count here
    assert backend in (
        "django.core.cache.backends.db.DatabaseCache",
        "django.core.cache.backends.redis.RedisCache",
    )


def test_a_password_reset_by_email_lifts_the_accounts_lock(client, make_user, mailoutbox):
    make_user("erin", email="erin@example.com")
    home = Client(REMOTE_ADDR="198.51.100.30")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _page_login(home, "/accounts/login/", "erin", "wrong")
    assert _page_login(home, "/accounts/login/", "erin", "pw-erin").status_code == 429
    client.post("/accounts/password/reset/", {"email": "erin@example.com"})
    link = re.search(r"https?://[^/\s]+(/accounts/reset/[^/\s]+/[^/\s]+/)", mailoutbox[0].body).group(1)
    form_url = client.get(link, follow=True).redirect_chain[-1][0]
    new = "a-Fresh-passphrase-42"
    assert client.post(form_url, {"new_password1": new, "new_password2": new}).status_code == 302
    assert _page_login(home, "/accounts/login/", "erin", new).status_code == 302
