"""A collection's re-index: it writes a second chunk set per document (the target's profile and
model) while searches read the current one, and switches in one row update once no document lacks
the new set; or it stops, with its reason, when a document can never have it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db.models import Exists, OuterRef

from knowledge.models import Chunk, ChunkProfile, Collection, Document

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
    """Switch the collection to its pending profile and model once no document lacks the new chunks.

    Until then every search reads the current set (the scope names the collection's profile and
    model), so the switch is this one row update, committed with the last document's chunks.
    """
    # NO KEY: the chunk inserts hold key-share locks on this row; a plain FOR UPDATE would deadlock.
    collection = Collection.objects.select_for_update(no_key=True).get(pk=collection_id)
    if collection.reindex_target != (chunk_set.profile.pk, chunk_set.model):
        return
    current = Chunk.objects.filter(
        document=OuterRef("pk"),
        chunk_profile_id=collection.chunk_profile_id,
        embedding_model=collection.embedding_model,
    )
    new = Chunk.objects.filter(
        document=OuterRef("pk"), chunk_profile=chunk_set.profile, embedding_model=chunk_set.model
    )
    missing = Document.objects.filter(Exists(current), ~Exists(new), collection=collection).exists()
    if not missing:
        collection.chunk_profile = chunk_set.profile
        collection.embedding_model = chunk_set.model
        collection.pending_chunk_profile = None
        collection.pending_embedding_model = ""
        collection.save(
            update_fields=[
                "chunk_profile",
                "embedding_model",
                "pending_chunk_profile",
                "pending_embedding_model",
                "updated_at",
            ]
        )
