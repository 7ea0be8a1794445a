"""Done when: a SCIM deactivation makes the user's open page session, API token and MCP session fail
within one request each. The application runs as it is served (uvicorn, config.asgi: pages, the
API, MCP and SCIM in one server process, on the test database); the user signs in through the
log-in page, holds an API token and an open MCP client session, and is deactivated by a SCIM
PATCH in Entra ID's or Okta's shape (or deleted)."""

from __future__ import annotations

import anyio
import pytest
import requests
from django.contrib.auth.models import User
from mcp import MCPError

from accounts.api_tokens import token_create
from tests.identity.scim_client import entra_user, okta_user, patch, scim_client
from tests.mcp.conftest import LiveServer, http_client, payload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]
PASSWORD = "a-long-password-for-the-test"


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker):
    server = LiveServer()
    try:
        server.wait_until_ready()
        yield server
    finally:
        server.stop()


def base_url(server) -> str:
    return server.url.removesuffix("mcp/")


def signed_in(base: str, username: str) -> requests.Session:
    """A browser's session: the log-in page's form posted with its CSRF token."""
    browser = requests.Session()
    page = browser.get(base + "accounts/login/", timeout=30)
    answer = browser.post(
        base + "accounts/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        },
        headers={"Referer": page.url},
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 302 and "sessionid" in browser.cookies, answer.text[:500]
    return browser


# How each provider ends access: Entra ID's documented disable (its "False" as text), Okta's
# deactivation (a value object without a path), and a DELETE.
ENDINGS = {
    "entra": ("PATCH", patch({"op": "Replace", "path": "active", "value": "False"})),
    "okta": ("PATCH", patch({"op": "replace", "value": {"active": False}})),
    "entra-delete": ("DELETE", None),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_scim_deactivation_ends_the_page_session_the_api_token_and_the_mcp_session(served, ending):
    base = base_url(served)
    source = ending.split("-")[0]
    scim = scim_client(base, name=source, source=source)
    body = entra_user("alice@contoso.com") if source == "entra" else okta_user("alice@contoso.com")
    answer = scim.post("Users", body)
    assert answer.status_code == 201, answer.text
    user = User.objects.get(pk=answer.json()["id"])
    user.set_password(PASSWORD)  # a password only to sign in here; SCIM users sign in through the provider
    user.save()
    browser = signed_in(base, user.username)
    _token, secret = token_create(user=user, name="laptop")
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {secret}"
    method, end = ENDINGS[ending]

    def page() -> int:
        return browser.get(base + "collections/", allow_redirects=False, timeout=30).status_code

    def api_status() -> int:
        return api.get(base + "api/v1/collections/", timeout=30).status_code

    async def scenario():
        async with http_client(served.url, secret) as mcp:
            assert "collections" in payload(await mcp.call_tool("list_collections", {}))
            assert await anyio.to_thread.run_sync(page) == 200
            assert await anyio.to_thread.run_sync(api_status) == 200
            ended = await anyio.to_thread.run_sync(lambda: scim.request(method, f"Users/{user.pk}", end))
            assert ended.status_code in (200, 204), ended.text
            with pytest.raises(MCPError):  # the MCP session's next call: 401
                await mcp.call_tool("list_collections", {})
            assert await anyio.to_thread.run_sync(page) == 302  # to the log-in page
            assert await anyio.to_thread.run_sync(api_status) == 401

    anyio.run(scenario)
    user.refresh_from_db()
    assert not user.is_active
