"""The MCP server over stdio (manage.py knowledge_mcp --user), driven by the SDK's client."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp import Client

from knowledge.models import Chunk
from tests.conftest import REPO_ROOT
from tests.mcp.conftest import TOOLS, error_text, payload, run, server_environment, stdio_parameters

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


def test_stdio_server_acts_as_the_named_user_with_every_tool(alice, hills, bob_collections):
    secret = bob_collections["secret"]
    bob_chunk = Chunk.objects.filter(document=bob_collections["document"]).first()

    async def scenario():
        async with Client(stdio_parameters("alice")) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            calls = {
                "list_collections": {},
                "search_knowledge": {"question": QUESTION, "collections": [hills.pk], "k": 2},
                "answer_research_question": {"question": QUESTION, "collections": [hills.pk]},
                "agentic_research_question": {"question": QUESTION, "collections": [hills.pk]},
                "optimize_search": {"queries": [QUESTION], "collections": [hills.pk]},
                "reindex_collection": {"collection": hills.pk},
            }
            results = {}
            for tool, arguments in calls.items():
                results[tool] = payload(await client.call_tool(tool, arguments))
                if tool == "search_knowledge":  # before re-indexing replaces the chunks (and their ids)
                    chunk_id = results[tool]["results"][0]["chunk_id"]
                    results["get_passage"] = payload(
                        await client.call_tool("get_passage", {"chunk": chunk_id})
                    )
            refused = [
                await client.call_tool("search_knowledge", {"question": "notes", "collections": [secret.pk]}),
                await client.call_tool("get_passage", {"chunk": bob_chunk.pk}),
                await client.call_tool("reindex_collection", {"collection": secret.pk}),
            ]
            return client.instructions, names, results, refused

    instructions, names, results, refused = run(scenario)
    assert names == TOOLS and "list_collections" in instructions
    assert [c["name"] for c in results["list_collections"]["collections"]] == ["bob shared", "hills"]
    top = results["search_knowledge"]["results"][0]
    assert top["document"] == "gravity_hill.md"
    assert top["url"].startswith("https://kb.example.test/documents/")  # --base-url makes links absolute
    answer = results["answer_research_question"]
    assert answer["mode"] == "extractive" and answer["citations"][0]["document"] == "gravity_hill.md"
    assert results["agentic_research_question"]["agentic"] is True
    assert results["optimize_search"]["queries"][0]["variants"]["hybrid"]["results"]
    assert results["reindex_collection"]["documents_queued"] == 1
    assert results["get_passage"]["cited_chunk_id"] == top["chunk_id"]
    assert [error_text(result) for result in refused] == [
        f"no such collection: {secret.pk}",
        "no such passage (chunk ids change when a document is re-indexed: ask by document and source_ref)",
        "no such collection",
    ]


def test_stdio_command_refuses_an_unknown_or_inactive_user(django_user_model):
    django_user_model.objects.create_user(username="gone", password="pw-gone", is_active=False)
    for username in ("nobody", "gone"):
        result = subprocess.run(
            [sys.executable, "manage.py", "knowledge_mcp", "--user", username],
            cwd=REPO_ROOT,
            env=server_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode != 0
        assert f"no active user named '{username}'" in result.stderr
        assert result.stdout == ""  # nothing but protocol messages ever goes to stdout
