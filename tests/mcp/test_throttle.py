"""MCP tool calls count against the REST API's rate limits (one counter per user and scope)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from mcp import Client
from mcp.shared.exceptions import MCPError
from rest_framework.exceptions import Throttled
from rest_framework.test import APIClient

from knowledge.mcp.identity import NamedUserIdentity
from knowledge.mcp.server import build_server
from knowledge.services.collections import collection_create
from tests.conftest import throttle_rates
from tests.mcp.conftest import error_text, payload, run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_per_minute(settings):
    throttle_rates(settings, retrieve="2/minute")
    cache.clear()  # a clean cache; the throttle counts are rows (RateCounter), reset with the test database
    yield
    cache.clear()


def test_searches_through_mcp_and_the_api_share_one_rate_limit(
    alice, token_for, two_per_minute, no_persistent_connections
):
    notes = collection_create(name="notes", owner=alice)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_for(alice)}")
    assert (
        api.post(
            "/api/v1/retrieve/", {"question": "hi", "collections": [notes.pk]}, format="json"
        ).status_code
        == 200
    )
    server = build_server(NamedUserIdentity(user_id=alice.pk))
    arguments = {"question": "hi", "collections": [notes.pk]}

    async def scenario():
        async with Client(server) as client:  # in-process: the same server definition, no transport
            allowed = await client.call_tool("search_knowledge", arguments)
            refused = await client.call_tool("answer_research_question", arguments)
            return allowed, refused

    allowed, refused = run(scenario)
    assert payload(allowed)["results"] == []
    assert error_text(refused).startswith(str(Throttled.default_detail))  # the API's own message
    assert refused.structured_content["error"]["status"] == 429
    assert (
        api.post(
            "/api/v1/retrieve/", {"question": "hi", "collections": [notes.pk]}, format="json"
        ).status_code
        == 429
    )


@pytest.mark.security
def test_listing_reading_passages_and_resources_count_as_api_reads(
    alice, token_for, two_per_minute, no_persistent_connections
):
    """The read tools and the collection resource share the API's retrieve rate, per user."""
    notes = collection_create(name="notes", owner=alice)
    server = build_server(NamedUserIdentity(user_id=alice.pk))

    async def scenario():
        async with Client(server) as client:
            listed = await client.call_tool("list_collections", {})
            summary = await client.read_resource(f"knowledge://collections/{notes.pk}")
            passage = await client.call_tool("get_passage", {"chunk": 1})
            listing = await client.call_tool("list_collections", {})
            with pytest.raises(MCPError) as refused_read:  # the SDK raises the server's resource error
                await client.read_resource(f"knowledge://collections/{notes.pk}")
            return listed, summary, passage, listing, str(refused_read.value)

    listed, summary, passage, listing, resource_error = run(scenario)
    assert payload(listed)["collections"][0]["name"] == "notes"
    assert "notes" in summary.contents[0].text
    for refused in (passage, listing):
        assert refused.structured_content["error"]["status"] == 429
    assert str(Throttled.default_detail) in resource_error
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_for(alice)}")
    retrieved = api.post("/api/v1/retrieve/", {"question": "hi", "collections": [notes.pk]}, format="json")
    assert retrieved.status_code == 429
