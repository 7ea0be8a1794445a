"""Promote, hold, discard and roll back a collection's releases (docs/design.md#releases).

Every change of which release serves is one transaction that updates the collection row (its
``chunk_profile`` and ``embedding_model`` name the serving release's chunk set, and the search
scope reads them), so a search sees one release or the other, never a mix. Each is audited.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from accounts.audit import audit_record
from config.base.errors import KnowledgeError, NotFoundError
from knowledge.ingestion.reindex import documents_missing, release_chunks_discard, serving_release
from knowledge.models import Chunk, Collection, Document, Release
from knowledge.services.documents import enqueue_document_processing

# States the gate or the operator still has to decide on; their set is the collection's re-index target.
UNDECIDED = (Release.State.BUILDING, Release.State.CANDIDATE, Release.State.HELD)


@dataclass(frozen=True)
class Rollback:
    serving: Release
    retired: Release
    documents_queued: int  # documents changed since the release last served, re-read into it


def releases_of(collection: Collection) -> list[Release]:
    """The collection's releases, newest first, each with ``chunks``: how many it stores."""
    serving_release(collection)
    releases = list(Release.objects.filter(collection=collection).select_related("chunk_profile"))
    counts = {
        (row["chunk_profile_id"], row["embedding_model"]): row["n"]
        for row in Chunk.objects.filter(collection=collection)
        .values("chunk_profile_id", "embedding_model")
        .annotate(n=Count("pk"))
        .order_by()
    }
    for release in releases:
        release.chunks = _live_count(release, counts.get(release.chunk_set, 0))
    return releases


def release_counted(release: Release) -> Release:
    """``release`` with ``chunks`` set, as ``releases_of`` gives it (for one release's own view)."""
    stored = Chunk.objects.filter(
        collection_id=release.collection_id,
        chunk_profile_id=release.chunk_profile_id,
        embedding_model=release.embedding_model,
    ).count()
    release.chunks = _live_count(release, stored)
    return release


def release_undecided(*, collection: Collection) -> Release | None:
    """The release being built, measured or held for the operator, with ``chunks``; else None."""
    release = (
        Release.objects.filter(collection=collection, state__in=UNDECIDED)
        .select_related("chunk_profile")
        .order_by("-pk")
        .first()
    )
    return release_counted(release) if release is not None else None


def release_newest(*, collection: Collection) -> Release | None:
    """The collection's newest release, with ``chunks``: what its last re-index built, whatever its state."""
    release = Release.objects.filter(collection=collection).select_related("chunk_profile").first()
    return release_counted(release) if release is not None else None


def _live_count(release: Release, stored: int) -> int:
    # A discarded release's set may be written again by a newer release of the same set.
    return stored if release.state != Release.State.DISCARDED else 0


def release_get(*, collection: Collection, release_id: int | None = None) -> Release:
    """Release ``release_id`` of the collection; without one, its undecided release (else NotFound)."""
    releases = Release.objects.filter(collection=collection)
    release = (
        releases.filter(pk=release_id).first()
        if release_id is not None
        else releases.filter(state__in=UNDECIDED).order_by("-pk").first()
    )
    if release is None:
        wanted = f"release {release_id}" if release_id is not None else "candidate or held release"
        raise NotFoundError(f"{collection.name} has no {wanted}")
    return release


@transaction.atomic
def release_promote(*, release: Release, actor=None, reason: str = "") -> Release:
    """Make ``release`` serve, in one transaction; the serving one retires (kept for a rollback)."""
    collection = Collection.objects.select_for_update(no_key=True).get(pk=release.collection_id)
    release = Release.objects.select_for_update().get(pk=release.pk)
    if release.state not in (Release.State.CANDIDATE, Release.State.HELD, Release.State.BUILDING):
        raise KnowledgeError(
            f"release {release.pk} is {release.state}; only a candidate or held one is promoted"
        )
    if documents_missing(collection, release.chunk_set):
        raise KnowledgeError(f"release {release.pk} is still being built: some documents lack its chunks")
    previous = serving_release(collection)
    now = timezone.now()
    _retire(previous, now, reason=f"replaced by release {release.pk}")
    release.state, release.promoted_at, release.reason = Release.State.SERVING, now, reason or release.reason
    release.save(update_fields=["state", "promoted_at", "reason"])
    _serve(collection, release)
    audit_record(
        action="release.promoted",
        obj=collection,
        actor=actor,
        changes={"release": [previous.pk, release.pk], **_set_change(previous, release)},
    )
    if not settings.KNOWLEDGE_RELEASE_RETENTION_DAYS:
        release_chunks_discard(previous, reason="retention is 0 days: dropped at the next promotion")
    return release


@transaction.atomic
def release_hold(*, release: Release, reason: str) -> Release:
    """The gate's verdict against promotion: the release waits for the operator, its set kept current."""
    release = Release.objects.select_for_update().get(pk=release.pk)
    if release.state != Release.State.CANDIDATE:
        return release  # discarded or replaced while the gate ran
    release.state, release.reason = Release.State.HELD, reason
    release.save(update_fields=["state", "reason"])
    audit_record(
        action="release.held",
        obj=release.collection,
        changes={"release": [None, release.pk], "reason": [None, reason]},
    )
    return release


@transaction.atomic
def release_discard(*, release: Release, actor=None, reason: str = "discarded by an operator") -> int:
    """Drop ``release`` and its chunks (a candidate, a held or a retired one); returns chunks deleted."""
    collection = Collection.objects.select_for_update(no_key=True).get(pk=release.collection_id)
    release = Release.objects.select_for_update().get(pk=release.pk)
    if release.state in (Release.State.SERVING, Release.State.DISCARDED):
        raise KnowledgeError(f"release {release.pk} is {release.state}; it cannot be discarded")
    if release.state in UNDECIDED:
        _target_clear(collection)
    deleted = release_chunks_discard(release, reason=reason)
    audit_record(
        action="release.discarded",
        obj=collection,
        actor=actor,
        changes={"release": [release.pk, None], "chunks": [deleted, 0]},
    )
    return deleted


@transaction.atomic
def release_rollback(*, collection: Collection, actor=None) -> Rollback:
    """Serve the release that served before the current one again, at once, from its kept chunks.

    Documents changed since it last served (uploaded, replaced or re-read) are queued to be read
    into it; the rest of it answers immediately, with nothing embedded.
    """
    collection = Collection.objects.select_for_update(no_key=True).get(pk=collection.pk)
    undecided = Release.objects.filter(collection=collection, state__in=UNDECIDED).first()
    if undecided is not None:
        raise KnowledgeError(
            f"release {undecided.pk} is {undecided.state}; promote or discard it before rolling back"
        )
    previous = (
        Release.objects.select_for_update()
        .filter(collection=collection, state=Release.State.RETIRED)
        .order_by(F("retired_at").desc(nulls_last=True), "-pk")
        .first()
    )
    if previous is None:
        raise KnowledgeError(f"{collection.name} keeps no earlier release to roll back to")
    current = serving_release(collection)
    since = previous.retired_at
    now = timezone.now()
    _retire(current, now, reason=f"rolled back to release {previous.pk}")
    previous.state, previous.promoted_at = Release.State.SERVING, now
    previous.reason = f"rolled back from release {current.pk}"
    previous.save(update_fields=["state", "promoted_at", "reason"])
    _serve(collection, previous)
    queued = _documents_refresh(collection, previous, since=since)
    audit_record(
        action="release.rolled_back",
        obj=collection,
        actor=actor,
        changes={"release": [current.pk, previous.pk], **_set_change(current, previous)},
    )
    return Rollback(serving=previous, retired=current, documents_queued=queued)


def releases_unbuilt_discard(collection: Collection, *, reason: str) -> int:
    """Discard the collection's undecided releases (a re-index cancelled); returns how many."""
    undecided = list(Release.objects.filter(collection=collection, state__in=UNDECIDED))
    for release in undecided:
        release_chunks_discard(release, reason=reason)
    return len(undecided)


def releases_expire(*, now=None) -> int:
    """Discard retired releases past KNOWLEDGE_RELEASE_RETENTION_DAYS (workers' housekeeping)."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.KNOWLEDGE_RELEASE_RETENTION_DAYS)
    expired = 0
    for release in Release.objects.filter(state=Release.State.RETIRED, retired_at__lt=cutoff):
        with transaction.atomic():
            release_chunks_discard(release, reason="kept past the retention period")
            audit_record(
                action="release.expired", obj=release.collection, changes={"release": [release.pk, None]}
            )
        expired += 1
    return expired


def _retire(release: Release, now, *, reason: str) -> None:
    release.state, release.retired_at, release.reason = Release.State.RETIRED, now, reason
    release.save(update_fields=["state", "retired_at", "reason"])


def _serve(collection: Collection, release: Release) -> None:
    """Point the collection at ``release``'s chunk set: the one row every search scope reads."""
    collection.chunk_profile_id, collection.embedding_model = release.chunk_set
    collection.pending_chunk_profile, collection.pending_embedding_model = None, ""
    collection.reindex_error = ""
    collection.save(
        update_fields=[
            "chunk_profile",
            "embedding_model",
            "pending_chunk_profile",
            "pending_embedding_model",
            "reindex_error",
            "updated_at",
        ]
    )


def _target_clear(collection: Collection) -> None:
    collection.pending_chunk_profile, collection.pending_embedding_model = None, ""
    collection.save(update_fields=["pending_chunk_profile", "pending_embedding_model", "updated_at"])


def _documents_refresh(collection: Collection, release: Release, *, since) -> int:
    """Queue the documents whose chunks in ``release`` are missing or older than their last reading."""
    lacking = Document.objects.filter(collection=collection).exclude(status=Document.Status.FAILED)
    kept = Chunk.objects.filter(
        collection=collection,
        chunk_profile_id=release.chunk_profile_id,
        embedding_model=release.embedding_model,
    ).values("document_id")
    changed = lacking.exclude(pk__in=kept)
    if since is not None:
        changed = changed | lacking.filter(processed_at__gt=since)
    ids = list(changed.values_list("pk", flat=True).distinct())
    for document_id in ids:
        enqueue_document_processing(document_id=document_id)
    return len(ids)


def _set_change(before: Release, after: Release) -> dict:
    changes = {}
    if before.chunk_profile_id != after.chunk_profile_id:
        changes["chunk_profile"] = [before.chunk_profile.name, after.chunk_profile.name]
    if before.embedding_model != after.embedding_model:
        changes["embedding_model"] = [before.embedding_model, after.embedding_model]
    return changes
