"""What an MCP tool changes is recorded in the audit log once, as the token's user, from their address."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from tests.mcp.conftest import http_client, payload, run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reindex_through_mcp_is_one_event_with_the_caller_and_their_address(
    live_mcp, alice, token_for, hills
):
    token = token_for(alice)
    before = set(AuditEvent.objects.values_list("pk", flat=True))

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            payload(
                await client.call_tool(
                    "search_knowledge", {"question": "gravity hill", "collections": [hills.pk]}
                )
            )
            return payload(await client.call_tool("reindex_collection", {"collection": hills.pk}))

    run(scenario)
    events = list(AuditEvent.objects.exclude(pk__in=before))
    document = hills.documents.get()
    assert [(e.action, e.object_type, e.object_id) for e in events] == [
        ("document.reindexed", "knowledge.document", str(document.pk))
    ], "a search records nothing; the re-index records one event for the collection's one document"
    (event,) = events
    assert (event.actor, event.actor_name, event.channel) == (alice, "alice", "mcp")
    assert event.address == "127.0.0.1"
