"""The MCP server over Streamable HTTP, driven by the SDK's client against a live uvicorn."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from django.db import connection
from mcp import MCPError

from accounts.api_tokens import token_revoke
from knowledge.models import ChatSession, Chunk, Collection, Profile, ProfileCollection
from knowledge.services.collections import collection_create
from tests.asking import chat_ask
from tests.mcp.conftest import TOOLS, error_text, http_client, payload, run

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


def test_tools_are_listed_with_descriptions_schemas_and_instructions(live_mcp, alice, token_for):
    token = token_for(alice)

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            listed = await client.list_tools()
            return client.instructions, {tool.name: tool for tool in listed.tools}

    instructions, tools = run(scenario)
    assert set(tools) == TOOLS
    assert "list_collections" in instructions and "not found" in instructions
    for tool in tools.values():
        assert len(tool.description) > 80, tool.name
        assert tool.input_schema["type"] == "object"
    assert tools["search_knowledge"].input_schema["required"] == ["question"]
    assert tools["optimize_search"].input_schema["required"] == ["queries"]
    assert tools["reindex_collection"].input_schema["required"] == ["collection"]
    assert tools["search_knowledge"].annotations.read_only_hint is True
    assert tools["reindex_collection"].annotations.read_only_hint is False


def test_every_tool_answers_for_its_user(live_mcp, alice, bob, token_for, hills):
    collection_create(name="bob shared", owner=bob, visibility="public")
    collection_create(name="bob secret", owner=bob)

    token = token_for(alice)

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            listed = payload(await client.call_tool("list_collections", {}))
            found = payload(
                await client.call_tool("search_knowledge", {"question": QUESTION, "collections": [hills.pk]})
            )
            top = found["results"][0]
            by_chunk = payload(await client.call_tool("get_passage", {"chunk": top["chunk_id"]}))
            by_place = payload(
                await client.call_tool(
                    "get_passage",
                    {"document": top["document_id"], "source_ref": top["source_ref"], "neighbours": 0},
                )
            )
            answer = payload(
                await client.call_tool(
                    "answer_research_question", {"question": QUESTION, "collections": [hills.pk]}
                )
            )
            follow_up = payload(
                await client.call_tool(
                    "answer_research_question", {"question": "And where is it?", "session": answer["session"]}
                )
            )
            agentic = payload(
                await client.call_tool(
                    "agentic_research_question", {"question": QUESTION, "collections": [hills.pk]}
                )
            )
            measured = payload(
                await client.call_tool(
                    "optimize_search", {"queries": [QUESTION, "magnetic hill"], "collections": [hills.pk]}
                )
            )
            reindexed = payload(await client.call_tool("reindex_collection", {"collection": hills.pk}))
            return listed, found, by_chunk, by_place, answer, follow_up, agentic, measured, reindexed

    listed, found, by_chunk, by_place, answer, follow_up, agentic, measured, reindexed = run(scenario)

    names = {c["name"]: c for c in listed["collections"]}
    assert set(names) == {"hills", "bob shared"}  # bob's private collection is not listed
    assert names["hills"]["document_count"] == 1 and names["hills"]["can_write"] is True
    assert names["hills"]["share_url"].startswith(f"http://127.0.0.1:{live_mcp.port}/")
    assert names["bob shared"]["share_url"] is None  # only the owner sees the share link
    assert names["bob shared"]["subscribed"] is False and names["bob shared"]["visibility"] == "public"

    top = found["results"][0]
    assert top["document"] == "gravity_hill.md" and top["source_ref"].startswith("heading=")
    assert top["url"].startswith(f"http://127.0.0.1:{live_mcp.port}/documents/{top['document_id']}/view/")
    assert {"similarity", "fused"} <= set(top["scores"])
    assert by_chunk["cited_chunk_id"] == top["chunk_id"] and top["content"][:200] in by_chunk["text"]
    assert by_chunk["before"] or by_chunk["after"]  # the neighbours of the passage
    assert by_place["source_ref"] == top["source_ref"] and by_place["before"] == by_place["after"] == []

    assert answer["mode"] == "extractive" and answer["citations"]
    assert answer["citations"][0]["document"] == "gravity_hill.md"
    assert answer["citations"][0]["url"].startswith("http://127.0.0.1:")
    assert follow_up["session"] == answer["session"] and follow_up["turn"] == 1
    assert ChatSession.objects.get(pk=answer["session"]).user == alice

    assert agentic["agentic"] is True and agentic["mode"] in {"extractive", "llm"}
    assert [step["step"] for step in agentic["steps"]][0] == "classify"
    assert agentic["trace"]["retrieval_rounds"] >= 1

    first = measured["queries"][0]
    assert set(first["variants"]) == {"dense", "hybrid"}
    assert first["variants"]["dense"]["hybrid"] is False and first["variants"]["hybrid"]["hybrid"] is True
    assert first["variants"]["hybrid"]["latency_ms"] > 0 and first["variants"]["dense"]["results"]
    assert first["effects"]["reranking"]["status"].startswith("not configured")
    assert set(measured["summary"]) >= {"dense", "hybrid", "hybrid_changed_top_result"}

    assert reindexed["documents_queued"] == 1 and reindexed["chunk_profile"] == "default"
    assert Chunk.objects.filter(collection=hills).exists()  # re-made, still searchable


def test_alice_never_reaches_bobs_private_collection(live_mcp, alice, bob, token_for, hills, bob_collections):
    secret, shared, bob_document = (bob_collections[key] for key in ("secret", "shared", "document"))
    bob_chunk = Chunk.objects.filter(document=bob_document).first()
    bob_session = chat_ask(user=bob, question="What is in my notes?", collection_ids=[secret.pk]).session_id
    bob_profile = Profile.objects.create(owner=bob, name="bob's", tag="bob")
    ProfileCollection.objects.create(profile=bob_profile, collection=secret)
    attempts = {
        "search_knowledge": [
            {"question": "notes", "collections": [secret.pk]},
            {"question": "notes", "profile": bob_profile.pk},
        ],
        "answer_research_question": [
            {"question": "notes", "collections": [secret.pk]},
            {"question": "notes", "session": bob_session},
            {"question": "notes", "profile": bob_profile.pk},
        ],
        "agentic_research_question": [{"question": "notes", "collections": [secret.pk]}],
        "get_passage": [
            {"chunk": bob_chunk.pk},
            {"document": bob_document.pk, "source_ref": bob_chunk.source_ref},
        ],
        "optimize_search": [{"queries": ["notes"], "collections": [secret.pk]}],
        "reindex_collection": [{"collection": secret.pk}],
    }

    token = token_for(alice)

    async def scenario():
        results = []
        async with http_client(live_mcp.url, token) as client:
            for tool, calls in attempts.items():
                for arguments in calls:
                    results.append((tool, arguments, await client.call_tool(tool, arguments)))
            listed = payload(await client.call_tool("list_collections", {"search": "bob"}))
            foreign_reindex = await client.call_tool("reindex_collection", {"collection": shared.pk})
            resource_error = None
            try:
                await client.read_resource(f"knowledge://collections/{secret.pk}")
            except Exception as exc:  # the SDK raises the protocol error
                resource_error = exc
            own = await client.read_resource(f"knowledge://collections/{hills.pk}")
        return results, listed, foreign_reindex, resource_error, own

    results, listed, foreign_reindex, resource_error, own = run(scenario)
    for tool, arguments, result in results:
        message = error_text(result)
        assert message.startswith("no such "), (tool, arguments, message)
        assert result.structured_content["error"]["status"] == 404, (tool, arguments)
        assert "bob" not in message and "notes" not in message.split("no such", 1)[1]
    assert [c["name"] for c in listed["collections"]] == ["bob shared"]
    assert error_text(foreign_reindex).startswith("only the collection's owner, or a team")
    assert foreign_reindex.structured_content["error"]["status"] == 403
    assert resource_error is not None and "no such collection" in str(resource_error)
    assert "gravity_hill.md" in own.contents[0].text
    assert Collection.objects.get(pk=secret.pk).pending_chunk_profile_id is None


def test_missing_bad_and_revoked_tokens_are_refused(live_mcp, alice, token_for):
    collection_create(name="notes", owner=alice)
    token = token_for(alice)
    token_id = alice.api_tokens.get().pk
    plain = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def post(extra: dict) -> httpx2.Response:
        return httpx2.post(live_mcp.url, content=json.dumps(plain), headers={**headers, **extra}, timeout=30)

    missing = post({})
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["error"]["code"] == "not_authenticated"
    assert post({"Authorization": "Bearer kn_not-a-real-token"}).json()["error"]["message"] == (
        "invalid or revoked token"
    )
    assert post({"Authorization": "Basic abc"}).status_code == 401

    async def call_then_revoke_then_call():
        async with http_client(live_mcp.url, token) as client:
            before = payload(await client.call_tool("list_collections", {}))
            await anyio.to_thread.run_sync(lambda: token_revoke(user=alice, token_id=token_id))
            with pytest.raises(MCPError):  # the SDK's client reports the 401 as an error response
                await client.call_tool("list_collections", {})
            return before

    before = run(call_then_revoke_then_call)
    assert before["collections"]
    assert post({"Authorization": f"Bearer {token}"}).status_code == 401

    async def connect_with_revoked():
        async with http_client(live_mcp.url, token) as client:
            await client.list_tools()

    with pytest.raises(BaseException) as refused:  # noqa: B017 - raised inside the SDK's task groups
        run(connect_with_revoked)
    assert "error response" in repr(refused.value) or refused.group_contains(MCPError), refused.value


def test_bad_arguments_are_tool_errors_and_the_server_stays_up(live_mcp, alice, token_for):
    hills = collection_create(name="hills", owner=alice).pk
    bad = [
        ("search_knowledge", {"question": 5, "collections": [hills]}, "question"),
        ("search_knowledge", {"collections": [hills]}, "question"),
        ("search_knowledge", {"question": "x" * 5000, "collections": [hills]}, "question"),
        ("search_knowledge", {"question": "hills", "collections": ["abc"]}, "collections"),
        ("search_knowledge", {"question": "hills"}, "give a profile or at least one collection"),
        (
            "search_knowledge",
            {"question": "hills", "collections": [hills], "k": 0},
            "greater than or equal to 1",
        ),
        ("search_knowledge", {"question": "   ", "collections": [hills]}, "blank"),
        ("answer_research_question", {"question": "hills"}, "give a profile, collections, or a session"),
        ("answer_research_question", {"question": "hills", "session": 2**62}, "no such chat session"),
        ("get_passage", {}, "give a chunk id, or a document id and a source_ref"),
        ("get_passage", {"chunk": 2**62}, "ask by document and source_ref"),
        ("get_passage", {"document": 1, "source_ref": "page=1", "neighbours": 9}, "less than or equal to 3"),
        ("optimize_search", {"queries": [], "collections": [hills]}, "queries"),
        ("optimize_search", {"queries": ["a"] * 11, "collections": [hills]}, "queries"),
        (
            "reindex_collection",
            {"collection": hills, "chunk_profile": "nope"},
            "no chunk profile named 'nope'",
        ),
        ("reindex_collection", {}, "collection"),
        ("list_collections", {"search": "a\x00b"}, "arguments.search: contains a NUL character"),
        ("no_such_tool", {}, "Unknown tool"),
    ]

    token = token_for(alice)

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            results = [
                (tool, expected, await client.call_tool(tool, arguments)) for tool, arguments, expected in bad
            ]
            still_fine = await client.call_tool("list_collections", {})
        return results, still_fine

    results, still_fine = run(scenario)
    for tool, expected, result in results:
        assert expected in error_text(result), (tool, expected, result.content[0].text)
    assert payload(still_fine)["collections"]


def test_clients_using_the_initialize_handshake_work_too(live_mcp, alice, bob, token_for):
    collection_create(name="hills", owner=alice)
    collection_create(name="bob shared", owner=bob, visibility="public")
    collection_create(name="bob secret", owner=bob)
    token = token_for(alice)

    async def scenario():
        async with http_client(live_mcp.url, token, mode="legacy") as client:
            tools = await client.list_tools()
            listed = await client.call_tool("list_collections", {})
            return client.protocol_version, {t.name for t in tools.tools}, listed

    version, names, listed = run(scenario)
    assert version < "2026" and names == TOOLS
    assert [c["name"] for c in payload(listed)["collections"]] == ["bob shared", "hills"]


def test_many_concurrent_calls_hold_a_bounded_number_of_database_connections(
    live_mcp, alice, token_for, hills
):
    hills = hills.pk

    token = token_for(alice)
    before = _other_connections()  # what earlier tests' threads may still hold

    async def scenario():
        async with http_client(live_mcp.url, token) as client:
            results = []

            async def call(n: int) -> None:
                arguments = {"question": f"gravity hill {n}", "collections": [hills], "k": 2}
                results.append(await client.call_tool("search_knowledge", arguments))

            async with anyio.create_task_group() as group:
                for n in range(40):
                    group.start_soon(call, n)
            return results

    results = run(scenario)
    assert len(results) == 40 and all(not r.is_error for r in results)
    # Each call hands its connection back when it ends: 40 concurrent calls must not mean 40 connections.
    opened = _other_connections() - before
    assert opened <= 12, opened


def _other_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]
