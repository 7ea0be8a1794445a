"""knowledge_release on the command line, retention, and knowledge_bench rollback."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from config.base.errors import KnowledgeError
from knowledge.models import Chunk, ChunkProfile, Collection, Release
from knowledge.services.collections import collection_create, collection_reindex
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.services.releases import release_promote, releases_expire
from tests.releases.conftest import DOCUMENTS

pytestmark = pytest.mark.django_db(transaction=True)


def release_command(*args) -> str:
    out = io.StringIO()
    call_command("knowledge_release", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def notes(alice):
    collection = collection_create(name="notes", owner=alice)
    path = DOCUMENTS["gravity_hill.md"]
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    return collection


def test_list_json_status_promote_rollback_and_discard(alice, notes):
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)
    collection_reindex(collection=notes, chunk_profile=small)  # held: nothing to measure
    rows = [
        json.loads(line) for line in release_command("list", "--collection", "notes", "--json").splitlines()
    ]
    assert [row["state"] for row in rows] == ["held", "serving"]
    for row in rows:
        assert {"id", "state", "chunk_profile", "embedding_model", "chunks", "created"} <= set(row)
        assert row["chunks"] > 0
    assert rows[0]["gate"]["questions"] == 0 and rows[0]["chunk_profile"] == "small"
    assert "nothing to measure" in release_command("status", "--collection", "notes")
    assert (
        json.loads(release_command("promote", "--collection", "notes", "--json"))["promoted"] == rows[0]["id"]
    )
    with pytest.raises(CommandError, match="no candidate or held release"):
        release_command("promote", "--collection", "notes")
    done = json.loads(release_command("rollback", "--collection", "notes", "--json"))
    assert done == {"serving": rows[1]["id"], "retired": rows[0]["id"], "documents_queued": 0}
    assert Collection.objects.get(pk=notes.pk).chunk_profile_id != small.pk
    out = release_command("discard", "--collection", "notes", "--release", str(rows[0]["id"]))
    assert out.startswith(f"release {rows[0]['id']} discarded")
    assert not Chunk.objects.filter(collection=notes, chunk_profile=small).exists()
    with pytest.raises(CommandError, match="keeps no earlier release"):
        release_command("rollback", "--collection", "notes")
    with pytest.raises(CommandError, match="no collection named"):
        release_command("list", "--collection", "nope")


def test_retired_releases_past_the_retention_are_discarded(alice, notes, settings):
    settings.KNOWLEDGE_RELEASE_RETENTION_DAYS = 14
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)
    collection_reindex(collection=notes, chunk_profile=small)
    release_promote(release=Release.objects.get(collection=notes, state="held"))
    retired = Release.objects.get(collection=notes, state="retired")
    assert releases_expire() == 0  # within the retention: kept for a rollback
    assert releases_expire(now=timezone.now() + timedelta(days=15)) == 1
    retired.refresh_from_db()
    assert retired.state == "discarded"
    assert not Chunk.objects.filter(collection=notes).exclude(chunk_profile=small).exists()


@pytest.mark.slow
def test_the_rollback_benchmark_reports_its_figures_and_leaves_nothing_behind(db):
    collections = Collection.objects.count()
    out = io.StringIO()
    call_command("knowledge_bench", "rollback", "--chunks", "200", "--rounds", "3", stdout=out)
    figures = json.loads(out.getvalue().splitlines()[-1])
    assert figures["benchmark"] == "rollback" and figures["rounds"] == 3
    assert figures["chunks_embedded"] == 0 and figures["documents_queued"] == 0
    assert 0 < figures["rollback_ms"]["p50"] < 1000
    assert figures["reference_reembed_ms"] > figures["rollback_ms"]["p50"]
    assert Collection.objects.count() == collections
    assert not ChunkProfile.objects.filter(name__startswith="bench-rollback").exists()


def test_a_gate_that_fails_holds_the_release_with_the_reason(alice, notes):
    from knowledge.evaluation.store import eval_set_replace
    from knowledge.tasks import release_gate

    question = {"external_id": "q1", "question": "What is a gravity hill?", "expected_sources": []}
    eval_set_replace(name="notes questions", questions=[question]).collections.add(notes)
    # A candidate that holds no chunks at all (its model has none): the gate measures it, finds it no
    # worse on a question nothing answers, and its promotion is refused: the gate fails.
    broken = Release.objects.create(
        collection=notes,
        state="candidate",
        chunk_profile=notes.chunk_profile,
        embedding_model="no/such-model",
    )
    with pytest.raises(KnowledgeError, match="still being built"):
        release_gate(broken.pk)
    broken.refresh_from_db()
    assert broken.state == "held" and broken.reason.startswith("the gate failed: release ")
    assert Collection.objects.get(pk=notes.pk).embedding_model != "no/such-model"
