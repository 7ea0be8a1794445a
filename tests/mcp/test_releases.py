"""reindex_collection reports the release it built and, once the gate ran, the gate's metrics."""

from __future__ import annotations

import pytest

from knowledge.evaluation.store import eval_set_replace
from knowledge.models import ChunkProfile, Release
from tests.mcp.conftest import error_text, http_client, payload, run
from tests.releases.conftest import gate_questions_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_reindex_under_another_profile_reports_its_release_and_gate(live_mcp, alice, bob, token_for, hills):
    ChunkProfile.objects.create(name="fixed 100", strategy="fixed", chunk_size=100, chunk_overlap=0)
    questions = eval_set_replace(name="hill questions", questions=gate_questions_for(["gravity_hill.md"]))
    questions.collections.add(hills)
    serving = Release.objects.get(collection=hills, state="serving")
    token, outsider = token_for(alice), token_for(bob)

    async def scenario():
        async with http_client(live_mcp.url, outsider) as client:
            refused = error_text(
                await client.call_tool(
                    "reindex_collection", {"collection": hills.pk, "chunk_profile": "fixed 100"}
                )
            )
        async with http_client(live_mcp.url, token) as client:
            rebuilt = payload(
                await client.call_tool(
                    "reindex_collection", {"collection": hills.pk, "chunk_profile": "fixed 100"}
                )
            )
            same = payload(await client.call_tool("reindex_collection", {"collection": hills.pk}))
        return refused, rebuilt, same

    refused, rebuilt, same = run(scenario)

    assert "no such collection" in refused
    assert rebuilt["collection"] == hills.pk and rebuilt["chunk_profile"] == "fixed 100"
    assert rebuilt["documents_queued"] == 1 and "note" in rebuilt and "switching_from" in rebuilt
    built = Release.objects.get(collection=hills, chunk_profile__name="fixed 100")
    release = rebuilt["release"]
    assert release["id"] == built.pk and release["state"] == built.state in {"held", "serving"}
    gate = rebuilt["gate"]  # processing is synchronous here: the gate measured it already
    assert gate == release["gate"] and gate["questions"] == len(built.gate["per_question"]) > 0
    assert gate["compared_with"] == serving.pk and gate["decision"] == built.gate["decision"]
    assert {"recall@5", "mrr"} <= set(gate) and {"recall@5", "mrr"} <= set(gate["serving"])
    expected_status = "held for you to promote or discard: " if built.state == "held" else "serving: "
    assert rebuilt["release_status"] == expected_status + built.reason
    # Under the serving profile nothing new is built: the documents are read again, no release.
    assert same["documents_queued"] == 1
    assert same["release"] is None and same["gate"] is None and same["release_status"] is None
