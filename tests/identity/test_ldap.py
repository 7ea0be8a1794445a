"""Signing in with an LDAP directory (a real slapd on 127.0.0.1), no mocks: bind and search over
StartTLS or LDAPS, groups read from the directory to teams, and the rules django-auth-ldap lacks:
an inactive account refused, a local account never taken over by name, a user removed from the
directory refused at the next page, API and MCP request, and usernames that are LDAP filters refused
before they reach the directory."""

from __future__ import annotations

import logging
from datetime import timedelta

import anyio
import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from mcp import MCPError
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from accounts.backends import DirectoryBackend
from accounts.directory import UNREACHABLE_GRACE
from accounts.models import AuditEvent, DirectoryAccount, TeamMapping
from config.base.identity import ldap_settings_from_env
from tests.identity.conftest import refusals as directory_refusals
from tests.identity.conftest import signed_in_user
from tests.identity.slapd import ADMIN_DN, ADMIN_PASSWORD, GROUPS, PEOPLE, USERS, slapd
from tests.mcp import conftest as mcp_fixtures
from tests.mcp.conftest import http_client, payload
from tests.served import served_mcp

pytestmark = pytest.mark.django_db
ALICE, DAVE, ERIN = USERS
BACKEND = "accounts.backends.DirectoryBackend"
no_persistent_connections = mcp_fixtures.no_persistent_connections


@pytest.fixture
def directory(tmp_path):
    with slapd(tmp_path) as running:
        yield running


@pytest.fixture
def use_directory(settings, monkeypatch, directory):
    """use_directory(**environment): the product configured for the test directory from the
    environment, as an operator would (StartTLS with the test CA unless told otherwise)."""

    def use(**environment):
        environment = {
            "AUTH_LDAP_SERVER_URI": directory.ldap_uri,
            "AUTH_LDAP_START_TLS": "true",
            "AUTH_LDAP_CA_FILE": str(directory.ca_file),
            "AUTH_LDAP_BIND_DN": ADMIN_DN,
            "AUTH_LDAP_BIND_PASSWORD": ADMIN_PASSWORD,
            "AUTH_LDAP_USER_SEARCH_BASE": PEOPLE,
            "AUTH_LDAP_GROUP_SEARCH_BASE": GROUPS,
            "LDAP_RECHECK_SECONDS": "0",
            **environment,
        }
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        for name, value in ldap_settings_from_env().items():
            setattr(settings, name, value)
        backends = [name for name in settings.AUTHENTICATION_BACKENDS if name != BACKEND]
        settings.AUTHENTICATION_BACKENDS = [*backends, BACKEND]

    use()
    return use


def sign_in(client, user, password=None):
    return client.post("/accounts/login/", {"username": user.uid, "password": password or user.password})


def refusals() -> list[str]:
    return directory_refusals("ldap.login_refused")


def test_a_directory_user_signs_in_and_its_groups_map_to_teams(client, use_directory):
    engineering = Group.objects.create(name="Engineering")
    sales = Group.objects.create(name="Sales")
    TeamMapping.objects.create(source="ldap", external_group="engineering", team=engineering)
    TeamMapping.objects.create(source="ldap", external_group=f"cn=sales,{GROUPS}", team=sales)  # by DN
    answer = sign_in(client, DAVE)
    assert answer.status_code == 302, answer.content[:1000]
    dave = signed_in_user(client)
    assert dave.username == "dave" and dave.email == "dave@example.org" and not dave.has_usable_password()
    assert set(dave.groups.all()) == {engineering, sales}
    assert DirectoryAccount.objects.get(user=dave).dn == DAVE.dn
    assert client.session["_auth_user_backend"] == BACKEND
    assert client.get("/collections/").status_code == 200


def test_a_wrong_password_is_refused(client, use_directory):
    sign_in(client, ALICE, password="not-the-password")
    assert signed_in_user(client) is None and not User.objects.exists()


def test_starttls_with_a_certificate_of_another_ca_is_refused(client, use_directory, directory):
    use_directory(AUTH_LDAP_CA_FILE=str(directory.wrong_ca_file))
    sign_in(client, ALICE)
    assert signed_in_user(client) is None and not User.objects.exists()


def test_ldaps_signs_in(client, use_directory, directory):
    use_directory(AUTH_LDAP_SERVER_URI=directory.ldaps_uri, AUTH_LDAP_START_TLS="false")
    sign_in(client, ALICE)
    assert signed_in_user(client).username == "alice"


def test_ldaps_with_a_certificate_of_another_ca_is_refused(client, use_directory, directory):
    use_directory(
        AUTH_LDAP_SERVER_URI=directory.ldaps_uri,
        AUTH_LDAP_START_TLS="false",
        AUTH_LDAP_CA_FILE=str(directory.wrong_ca_file),
    )
    sign_in(client, ALICE)
    assert signed_in_user(client) is None


@pytest.mark.security
def test_an_inactive_account_is_refused_at_sign_in_and_its_session_ends(client, use_directory):
    sign_in(client, ALICE)
    alice = signed_in_user(client)
    User.objects.filter(pk=alice.pk).update(is_active=False)
    assert client.get("/collections/").status_code == 302  # the open session: signed out
    client.logout()
    sign_in(client, ALICE)
    assert signed_in_user(client) is None
    assert refusals() == ["the account is inactive"]


@pytest.mark.security
def test_a_local_account_with_the_same_name_is_not_taken_over(client, use_directory, alice):
    """alice (local, password "pw-alice") and the directory's alice are two people."""
    sign_in(client, ALICE)
    assert signed_in_user(client) is None
    assert refusals() == ["a local account has this name"]
    assert not DirectoryAccount.objects.exists()
    client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert signed_in_user(client) == alice  # the local account still signs in with its password


@pytest.mark.security
def test_a_user_removed_from_the_directory_is_refused_at_the_next_page_and_api_request(
    client, use_directory, directory
):
    sign_in(client, ERIN)
    erin = signed_in_user(client)
    _, secret = token_create(user=erin, name="laptop")
    api = APIClient(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get("/api/v1/collections/").status_code == 200
    assert client.get("/collections/").status_code == 200
    directory.delete(ERIN.dn)
    assert client.get("/collections/").status_code == 302
    assert api.get("/api/v1/collections/").status_code == 401
    erin.refresh_from_db()
    assert not erin.is_active and AuditEvent.objects.filter(action="ldap.user_missing").count() == 1


@pytest.mark.security
def test_an_api_token_alone_notices_the_removal(client, use_directory, directory):
    """No page request in between: the token path asks the directory itself."""
    sign_in(client, ERIN)
    _, secret = token_create(user=signed_in_user(client), name="script")
    directory.delete(ERIN.dn)
    assert APIClient(HTTP_AUTHORIZATION=f"Bearer {secret}").get("/api/v1/collections/").status_code == 401


def test_within_the_recheck_interval_the_directory_is_not_asked_again(client, use_directory, directory):
    use_directory(LDAP_RECHECK_SECONDS="3600")
    sign_in(client, ERIN)
    directory.delete(ERIN.dn)
    assert client.get("/collections/").status_code == 200


def test_without_a_directory_tokens_take_no_directory_query(client, settings, bob):
    settings.AUTH_LDAP_SERVER_URI = ""
    _, secret = token_create(user=bob, name="script")
    with CaptureQueriesContext(connection) as queries:
        assert APIClient(HTTP_AUTHORIZATION=f"Bearer {secret}").get("/api/v1/tokens/").status_code == 200
    assert not [query for query in queries.captured_queries if "directoryaccount" in query["sql"]]


@pytest.mark.security
@pytest.mark.parametrize("username", ["*", "alice)(uid=*", "al*", "alice\x00", "alice)(|(uid=*", "*)(cn=*"])
def test_a_username_that_is_an_ldap_filter_never_reaches_the_directory(
    client, use_directory, caplog, username
):
    with caplog.at_level(logging.DEBUG, logger="django_auth_ldap"):
        client.post("/accounts/login/", {"username": username, "password": ALICE.password})
    assert signed_in_user(client) is None and not User.objects.exists()
    assert not [record for record in caplog.records if record.name.startswith("django_auth_ldap")]


@pytest.mark.security
@pytest.mark.parametrize("username", ["*", "alice)(uid=*", "alice\x00", "alice\\2a", " alice"])
def test_the_backend_refuses_such_a_username_whatever_path_it_comes_by(use_directory, caplog, username):
    """The log-in page refuses a NUL before any backend (RejectNulMiddleware); the API's password
    exchange or another caller of authenticate() may not, so the backend checks for itself."""
    with caplog.at_level(logging.DEBUG, logger="django_auth_ldap"):
        request = RequestFactory().post("/api/v1/auth/token/")
        assert DirectoryBackend().authenticate(request, username=username, password=ALICE.password) is None
    assert not [record for record in caplog.records if record.name.startswith("django_auth_ldap")]


@pytest.mark.parametrize(
    "environment",
    [
        {"AUTH_LDAP_START_TLS": "false"},  # ldap:// in the clear
        {"AUTH_LDAP_SERVER_URI": "http://ldap.example.org"},
        {"AUTH_LDAP_USER_SEARCH_BASE": ""},
        {"AUTH_LDAP_USER_SEARCH_FILTER": "(uid=alice)"},
        {"AUTH_LDAP_CA_FILE": "/nonexistent/ca.pem"},
        {"LDAP_RECHECK_SECONDS": "-1"},
    ],
)
def test_a_mistake_in_the_directory_settings_stops_the_process(monkeypatch, environment):
    base = {
        "AUTH_LDAP_SERVER_URI": "ldap://ldap.example.org",
        "AUTH_LDAP_START_TLS": "true",
        "AUTH_LDAP_USER_SEARCH_BASE": PEOPLE,
    }
    for name, value in {**base, **environment}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured):
        ldap_settings_from_env()


def test_without_a_server_the_directory_is_off(monkeypatch):
    monkeypatch.delenv("AUTH_LDAP_SERVER_URI", raising=False)
    assert ldap_settings_from_env() == {"AUTH_LDAP_SERVER_URI": ""}


def test_with_local_log_in_off_the_directory_still_signs_in_on_the_log_in_page(
    client, use_directory, settings
):
    settings.LOCAL_LOGIN_ENABLED = False
    page = client.get("/accounts/login/").content.decode()
    assert 'name="username"' in page and 'name="password"' in page
    sign_in(client, ALICE)
    assert signed_in_user(client).username == "alice"


@pytest.mark.parametrize("local_login", [True, False])
def test_a_directory_user_exchanges_the_directory_password_for_an_api_token(
    use_directory, settings, local_login
):
    settings.LOCAL_LOGIN_ENABLED = local_login
    api = APIClient()
    made = api.post("/api/v1/auth/token/", {"username": "alice", "password": ALICE.password}, format="json")
    assert made.status_code == 201, made.content
    wrong = api.post("/api/v1/auth/token/", {"username": "alice", "password": "wrong"}, format="json")
    assert wrong.status_code == 401 and "wrong username or password" in wrong.content.decode()


def test_while_the_directory_is_down_users_it_confirmed_lately_keep_working_then_are_refused(
    client, use_directory, directory
):
    sign_in(client, ALICE)
    directory.stop()
    assert client.get("/collections/").status_code == 200  # confirmed a moment ago
    DirectoryAccount.objects.update(checked_at=timezone.now() - UNREACHABLE_GRACE - timedelta(seconds=1))
    assert client.get("/collections/").status_code == 302
    assert User.objects.get(username="alice").is_active  # the directory is gone, not the user


@pytest.mark.security
@pytest.mark.django_db(transaction=True)  # the server's threads read the test's rows on their own connections
@pytest.mark.usefixtures("no_persistent_connections")
def test_an_open_mcp_session_fails_at_its_next_request_once_its_user_leaves_the_directory(
    client, use_directory, directory
):
    sign_in(client, ERIN)
    _, secret = token_create(user=signed_in_user(client), name="assistant")

    async def call_then_remove_then_call(url: str) -> dict:
        async with http_client(url, secret) as mcp:
            before = payload(await mcp.call_tool("list_collections", {}))
            await anyio.to_thread.run_sync(lambda: directory.delete(ERIN.dn))
            with pytest.raises(MCPError):  # the SDK's client reports the 401 as an error response
                await mcp.call_tool("list_collections", {})
            return before

    with served_mcp() as url:
        assert anyio.run(call_then_remove_then_call, url)["collections"] == []
    assert not User.objects.get(username="erin").is_active


def test_an_account_the_operator_linked_signs_in_and_stays_checked_under_its_directory_name(
    client, use_directory, make_user
):
    """A local account handed over to the directory in the admin (its link names the DN and the
    directory's name for the user): the directory's alice signs into it, and the re-check at each
    request searches the directory's name, not the account's."""
    local = make_user("alice.liddell")
    DirectoryAccount.objects.create(user=local, dn=ALICE.dn.upper(), username="alice")  # as typed
    sign_in(client, ALICE)
    assert signed_in_user(client) == local
    assert client.get("/collections/").status_code == 200
    local.refresh_from_db()
    assert local.is_active
