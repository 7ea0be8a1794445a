"""A collection's re-index builds a release: it writes a second chunk set per document (the
target's profile and model) while searches read the serving release's, and once no document lacks
the new set the release becomes a candidate for the gate (knowledge.evaluation.gate), which
promotes or holds it; or the build stops, with its reason, when a document can never have it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from accounts.audit import audit_actor
from knowledge.clients.embedding_registry import embedding_model_info
from knowledge.ingestion.versions import EXTRACTION_VERSION, parser_version, product_version
from knowledge.models import Chunk, ChunkProfile, Collection, Document, Release
from knowledge.task_queues import long_work_queue, task_queue

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkSet:
    """Which of a document's chunk sets a run replaces: one per chunk profile and embedding model."""

    profile: ChunkProfile
    model: str


def pending_reindex_check(collection_id: int) -> None:
    """Switch the collection if a re-index in progress lacks nothing any more (after a delete: the
    last document without the new set may be the one deleted, and no run would check again)."""
    collection = Collection.objects.filter(pk=collection_id).first()
    target = collection.reindex_target if collection else None
    if target is not None:
        profile_id, model = target
        finish_pending_reindex(collection_id, ChunkSet(ChunkProfile.objects.get(pk=profile_id), model))


def chunk_set_wanted(*, collection_id: int, chunk_set: ChunkSet) -> bool:
    """Whether the collection searches ``chunk_set`` or a re-index in progress writes it."""
    collection = Collection.objects.get(pk=collection_id)
    wanted = {(collection.chunk_profile_id, collection.embedding_model), collection.reindex_target}
    return (chunk_set.profile.pk, chunk_set.model) in wanted


def reindex_stop(*, collection_id: int, chunk_set: ChunkSet, reason: str) -> None:
    """End the collection's re-index to ``chunk_set`` as not completed: the current set stays
    searched, the new sets written so far go (they would only cost quota), and the reason stays
    on the collection until the next re-index is asked for."""
    collection = Collection.objects.select_for_update(no_key=True).get(pk=collection_id)
    if collection.reindex_target != (chunk_set.profile.pk, chunk_set.model):
        return  # finished, cancelled or replaced by another re-index meanwhile
    target = chunk_set.profile.name if collection.pending_chunk_profile_id else chunk_set.model
    collection.reindex_error = f"re-index to {target} stopped: {reason}"
    Release.objects.filter(
        collection=collection, state=Release.State.BUILDING, **_set_fields(chunk_set)
    ).update(state=Release.State.DISCARDED, reason=collection.reindex_error)
    collection.pending_chunk_profile = None
    collection.pending_embedding_model = ""
    collection.save(
        update_fields=["pending_chunk_profile", "pending_embedding_model", "reindex_error", "updated_at"]
    )
    Chunk.objects.filter(
        collection=collection, chunk_profile=chunk_set.profile, embedding_model=chunk_set.model
    ).delete()
    logger.warning("Collection %s: %s", collection_id, collection.reindex_error)


def finish_pending_reindex(collection_id: int, chunk_set: ChunkSet) -> None:
    """Make the building release a candidate once no document lacks its chunks, and queue its gate.

    The collection keeps the release as its re-index target while the gate runs and while it is
    held, so documents added meanwhile are written in both sets and a promotion finds it complete.
    """
    # NO KEY: the chunk inserts hold key-share locks on this row; a plain FOR UPDATE would deadlock.
    collection = Collection.objects.select_for_update(no_key=True).get(pk=collection_id)
    if collection.reindex_target != (chunk_set.profile.pk, chunk_set.model):
        return
    release = Release.objects.filter(
        collection=collection, state=Release.State.BUILDING, **_set_fields(chunk_set)
    ).first()
    if release is None or documents_missing(collection, release.chunk_set):
        return
    release.state, release.built_at = Release.State.CANDIDATE, timezone.now()
    release.save(update_fields=["state", "built_at"])
    release_gate_enqueue(release.pk)


def documents_missing(collection: Collection, chunk_set: tuple[int, str]) -> bool:
    """Whether a document serving chunks lacks ``chunk_set``'s (the set is not complete)."""
    return documents_lacking(collection, chunk_set).exists()


def documents_lacking(collection: Collection, chunk_set: tuple[int, str]) -> QuerySet[Document]:
    """The documents serving chunks that lack ``chunk_set``'s: what a release of it still waits for."""
    current = Chunk.objects.filter(
        document=OuterRef("pk"),
        chunk_profile_id=collection.chunk_profile_id,
        embedding_model=collection.embedding_model,
    )
    new = Chunk.objects.filter(
        document=OuterRef("pk"), chunk_profile_id=chunk_set[0], embedding_model=chunk_set[1]
    )
    return Document.objects.filter(Exists(current), ~Exists(new), collection=collection)


def release_building(collection: Collection, chunk_set: tuple[int, str]) -> bool:
    """Whether ``collection``'s re-index to ``chunk_set`` is under way: its release is being built."""
    return collection.reindex_target == tuple(chunk_set) and (
        Release.objects.filter(
            collection=collection,
            state=Release.State.BUILDING,
            chunk_profile_id=chunk_set[0],
            embedding_model=chunk_set[1],
        ).exists()
    )


RELEASE_GATE_TASK = "knowledge.tasks.release_gate"


def release_gate_enqueue(release_id: int) -> None:
    """Queue the gate once the candidate's state is committed (by dotted name: tasks sit above)."""
    transaction.on_commit(
        lambda: task_queue(
            RELEASE_GATE_TASK,
            release_id,
            queue=long_work_queue(),
            task_name=f"release-{release_id}-gate",
            group="releases",
        )
    )


def release_build_start(*, collection: Collection, chunk_set: tuple[int, str], created_by=None) -> Release:
    """A building release for ``chunk_set``, in the caller's transaction (the collection row locked).

    A release being built, measured or held for another set is replaced (its chunks go: nobody
    would search them), and so is a retired release of the same set: it holds the text of versions
    replaced or deleted since, so every document writes the set afresh.
    """
    replaced = Release.objects.filter(collection=collection).filter(
        state__in=[Release.State.BUILDING, Release.State.CANDIDATE, Release.State.HELD]
    ) | Release.objects.filter(
        collection=collection,
        state=Release.State.RETIRED,
        chunk_profile_id=chunk_set[0],
        embedding_model=chunk_set[1],
    )
    for release in replaced:
        release_chunks_discard(release, reason="replaced by a newer re-index")
    # Asked for from a page, the API or MCP: the signed-in user the audit log names.
    return _release_new(collection, chunk_set, created_by=created_by or audit_actor())


def release_chunks_discard(release: Release, *, reason: str) -> int:
    """Discard ``release`` (never the serving one): its chunks go; returns how many."""
    if release.state == Release.State.SERVING:
        raise ValueError("the serving release cannot be discarded")
    deleted, _ = Chunk.objects.filter(
        collection_id=release.collection_id,
        chunk_profile_id=release.chunk_profile_id,
        embedding_model=release.embedding_model,
    ).delete()
    release.state, release.reason = Release.State.DISCARDED, reason
    release.save(update_fields=["state", "reason"])
    return deleted


def _backend_of(model: str) -> str:
    engine = embedding_model_info(model).engine
    return settings.KNOWLEDGE_EMBEDDING_BACKEND if engine == "minilm" else engine


def _set_fields(chunk_set: ChunkSet) -> dict:
    return {"chunk_profile": chunk_set.profile, "embedding_model": chunk_set.model}


def serving_release(collection: Collection) -> Release:
    """The release whose chunks the collection serves (recorded now for a collection made before
    releases, or through a path that made none)."""
    release = Release.objects.filter(collection=collection, state=Release.State.SERVING).first()
    if release is not None:
        return release
    stale = Release.objects.filter(
        collection=collection,
        chunk_profile_id=collection.chunk_profile_id,
        embedding_model=collection.embedding_model,
    ).exclude(state=Release.State.DISCARDED)
    for release in stale:  # a live release of the serving set that is not marked serving
        release.state = Release.State.DISCARDED
        release.save(update_fields=["state"])
    serving = (collection.chunk_profile_id, collection.embedding_model)
    return _release_new(collection, serving, state=Release.State.SERVING, promoted_at=timezone.now())


def _release_new(collection: Collection, chunk_set: tuple[int, str], **fields) -> Release:
    """A release of ``chunk_set``, recording what makes its chunks: backend, readers, versions."""
    return Release.objects.create(
        collection=collection,
        chunk_profile_id=chunk_set[0],
        embedding_model=chunk_set[1],
        embedding_backend=_backend_of(chunk_set[1]),
        parser_version=parser_version(),
        extraction_version=EXTRACTION_VERSION,
        product_version=product_version(),
        **fields,
    )
