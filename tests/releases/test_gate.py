"""Every index change is a release measured before it serves, and reversible after."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from knowledge.models import Chunk, Collection, ProcessingJob, Release
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_reindex
from knowledge.services.releases import release_discard, release_promote, release_rollback
from tests.asking import request_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

QUESTION = "Why does a car left out of gear seem to roll uphill at a mystery spot?"


def releases(collection) -> dict[str, list[Release]]:
    found: dict[str, list[Release]] = {}
    for release in Release.objects.filter(collection=collection).order_by("pk"):
        found.setdefault(release.state, []).append(release)
    return found


def served_profiles(user, collection) -> set[int]:
    context = retrieve(
        user=user, request=request_for(user, question=QUESTION, collection_ids=[collection.pk])
    )
    assert context.primary_chunks
    return {r.chunk.chunk_profile_id for r in context.primary_chunks}


def test_a_release_as_good_as_the_serving_one_is_promoted_by_the_gate(alice, handbook, default_again):
    first = releases(handbook)["serving"][0]
    collection_reindex(collection=handbook, chunk_profile=default_again)
    handbook.refresh_from_db()
    states = releases(handbook)
    assert [r.pk for r in states["retired"]] == [first.pk]
    serving = states["serving"][0]
    assert handbook.chunk_profile_id == default_again.pk == serving.chunk_profile_id
    assert handbook.reindex_target is None
    report = serving.gate
    assert report["decision"] == "promoted" and report["regressions"] == []
    assert report["questions"] >= 20 and report["origins"]["imported"] == report["questions"]
    assert report["serving"]["release"] == first.pk and report["candidate"]["release"] == serving.pk
    assert report["candidate"]["recall@5"] >= report["serving"]["recall@5"] - 0.02
    assert len(report["per_question"]) == report["questions"]
    assert served_profiles(alice, handbook) == {default_again.pk}
    assert AuditEvent.objects.filter(action="release.promoted", object_id=str(handbook.pk)).exists()


def test_fixed_hundred_character_chunks_are_held_with_the_regression_and_never_serve(
    alice, handbook, hundred_characters
):
    before = handbook.chunk_profile_id
    collection_reindex(collection=handbook, chunk_profile=hundred_characters)
    handbook.refresh_from_db()
    held = releases(handbook)["held"][0]
    assert held.chunk_profile_id == hundred_characters.pk
    assert handbook.chunk_profile_id == before  # the serving release still answers
    assert served_profiles(alice, handbook) == {before}
    regressed = {r["metric"] for r in held.gate["regressions"]}
    assert regressed and held.reason.startswith("regressed beyond tolerance: ")
    assert held.gate["worse"] > 0
    assert AuditEvent.objects.filter(action="release.held", object_id=str(handbook.pk)).exists()
    # The operator can still promote it; then roll back to the release that served.
    release_promote(release=held, reason="promoted by an operator")
    handbook.refresh_from_db()
    assert handbook.chunk_profile_id == hundred_characters.pk
    chunks_before = Chunk.objects.count()
    jobs_before = ProcessingJob.objects.count()
    done = release_rollback(collection=handbook)
    handbook.refresh_from_db()
    assert handbook.chunk_profile_id == before and done.retired.pk == held.pk
    assert done.documents_queued == 0
    assert Chunk.objects.count() == chunks_before  # nothing re-embedded, nothing dropped
    assert ProcessingJob.objects.count() == jobs_before
    assert served_profiles(alice, handbook) == {before}
    assert AuditEvent.objects.filter(action="release.rolled_back", object_id=str(handbook.pk)).exists()


def test_a_release_with_nothing_to_measure_waits_for_the_operator(alice, handbook, default_again):
    handbook.gate_eval_sets.clear()
    collection_reindex(collection=handbook, chunk_profile=default_again)
    held = releases(handbook)["held"][0]
    assert held.gate["questions"] == 0
    assert held.reason.startswith("nothing to measure: ")
    assert "no question set is linked to the collection" in held.reason
    # Discarding it drops its chunks and ends the re-index; the serving release is untouched.
    serving = Collection.objects.get(pk=handbook.pk).chunk_profile_id
    assert Chunk.objects.filter(collection=handbook, chunk_profile=default_again).exists()
    release_discard(release=held)
    handbook.refresh_from_db()
    assert not Chunk.objects.filter(collection=handbook, chunk_profile=default_again).exists()
    assert handbook.reindex_target is None and handbook.chunk_profile_id == serving
    assert Release.objects.get(pk=held.pk).state == "discarded"
