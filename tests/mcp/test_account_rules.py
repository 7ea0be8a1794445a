"""The account rules the API applies to a Bearer token hold for MCP over real HTTP too (the live
uvicorn serving config.asgi, where /mcp/ is an ASGI app beside Django and so never passes
Django's middleware): an operator still on the default password is refused, and a deactivated
user's open MCP session fails at its next request."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from mcp import MCPError

from accounts.api_tokens import token_create
from accounts.policy import DEFAULT_PASSWORD_MESSAGE
from knowledge.services.collections import collection_create
from tests.mcp.conftest import http_client, payload, run

pytestmark = pytest.mark.django_db(transaction=True)
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def mcp_post(url: str, token: str) -> httpx2.Response:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    return httpx2.post(url, content=json.dumps(LIST_TOOLS), headers=headers, timeout=30)


@pytest.fixture
def default_operator(monkeypatch):
    """The operator ensure_operator makes when OPERATOR_PASSWORD is not set: "admin", flagged."""
    monkeypatch.delenv("OPERATOR_PASSWORD", raising=False)
    monkeypatch.delenv("OPERATOR_USERNAME", raising=False)
    call_command("ensure_operator")
    return User.objects.get(username="admin")


@pytest.mark.security
def test_an_operator_on_the_default_password_is_refused_until_it_changes(live_mcp, default_operator):
    """A token made before the flag (an upgrade flagged the default password) opens nothing: the
    same 403 and message as the API's."""
    collection_create(name="operator notes", owner=default_operator)
    _, secret = token_create(user=default_operator, name="assistant")
    refused = mcp_post(live_mcp.url, secret)
    assert refused.status_code == 403, refused.text[:300]
    error = refused.json()["error"]
    assert error["code"] == "permission_denied" and error["message"] == DEFAULT_PASSWORD_MESSAGE
    default_operator.set_password("a-New-secret-93")
    default_operator.save()
    assert mcp_post(live_mcp.url, secret).status_code == 200


@pytest.mark.security
def test_a_deactivated_users_open_session_fails_at_its_next_request(live_mcp, alice):
    collection_create(name="notes", owner=alice)
    _, secret = token_create(user=alice, name="assistant")

    async def call_then_deactivate_then_call():
        async with http_client(live_mcp.url, secret) as client:
            before = payload(await client.call_tool("list_collections", {}))
            await anyio.to_thread.run_sync(lambda: User.objects.filter(pk=alice.pk).update(is_active=False))
            with pytest.raises(MCPError):  # the SDK's client reports the 401 as an error response
                await client.call_tool("list_collections", {})
            return before

    assert [c["name"] for c in run(call_then_deactivate_then_call)["collections"]] == ["notes"]
    refused = mcp_post(live_mcp.url, secret)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "not_authenticated"
