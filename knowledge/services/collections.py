"""Services for collections and chunk profiles."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef

from accounts.audit import audit_changes, audit_record, audit_values
from config.base.errors import KnowledgeError, NotFoundError
from config.base.validation import text_clean
from knowledge.clients.embedding_registry import embedding_model_names
from knowledge.ingestion.reindex import (
    documents_lacking,
    release_build_start,
    release_building,
    serving_release,
)
from knowledge.models import ChunkProfile, Collection, Document, ProcessingJob
from knowledge.services.documents import (
    document_files_delete_on_commit,
    document_reindex_queued,
    enqueue_document_processing,
    reindex_charge,
)
from knowledge.services.marketplace import subscriptions_end_all
from knowledge.services.releases import release_promote, releases_unbuilt_discard
from knowledge.services.sharing import collection_link_rotate

MAX_DESCRIPTION = 20000
# What a collection's audit record shows of a change (and of a new collection).
AUDITED_FIELDS = ["name", "description", "tags", "visibility", "listed", "embedding_model"]
MAX_TAGS = 50


def chunk_profile_default() -> ChunkProfile:
    """The active chunk profile; recreates the default (paragraph) profile if none is active."""
    active = ChunkProfile.objects.filter(is_active=True).first()
    if active:
        return active
    profile, _ = ChunkProfile.objects.get_or_create(
        name="default", defaults={"strategy": "paragraph", "chunk_size": 1000, "chunk_overlap": 200}
    )
    ChunkProfile.objects.filter(pk=profile.pk).update(is_active=True)
    profile.is_active = True
    return profile


def chunk_profile_get(*, name: str) -> ChunkProfile:
    try:
        return ChunkProfile.objects.get(name=name)
    except ChunkProfile.DoesNotExist:
        known = ", ".join(ChunkProfile.objects.values_list("name", flat=True))
        raise NotFoundError(f"no chunk profile named {name!r} (known: {known})") from None


def embedding_model_checked(name) -> str:
    """``name`` when it is a model of the registry (bundled or a registered endpoint); KnowledgeError
    naming the known ones otherwise."""
    known = embedding_model_names()
    if name not in known:
        known = ", ".join(known)
        raise KnowledgeError(f"unknown embedding model {str(name)[:200]!r}; choose one of: {known}")
    return name


def collection_create(
    *,
    name: str,
    owner=None,
    description: str = "",
    tags: list[str] | None = None,
    visibility: str = Collection.Visibility.PRIVATE,
    chunk_profile: ChunkProfile | None = None,
    embedding_model: str | None = None,
) -> Collection:
    """A new collection; ``embedding_model`` (default: KNOWLEDGE_EMBEDDING_MODEL) embeds its chunks."""
    name = text_clean(name, field="a collection's name", max_length=200)
    if not name:
        raise KnowledgeError("a collection needs a name")
    description = text_clean(description, field="a collection's description", max_length=MAX_DESCRIPTION)
    tags = _tags_clean(tags or [])
    if visibility not in Collection.Visibility.values:
        raise KnowledgeError(f"visibility must be one of {', '.join(Collection.Visibility.values)}")
    model = embedding_model_checked(embedding_model) if embedding_model else ""
    try:
        with transaction.atomic():
            collection = Collection.objects.create(
                name=name,
                owner=owner,
                description=description,
                tags=tags,
                visibility=visibility,
                chunk_profile=chunk_profile or chunk_profile_default(),
                embedding_model=model,  # empty: the default model (Collection.save)
            )
            serving_release(collection)  # release 1: what its first documents are read into
            audit_record(
                action="collection.created",
                obj=collection,
                changes=audit_changes({}, audit_values(collection, AUDITED_FIELDS)),
            )
            return collection
    except IntegrityError:
        raise KnowledgeError(f"a collection named {name!r} already exists") from None


def collection_update(*, collection: Collection, **changes) -> Collection:
    """Set the given fields (name, description, tags, visibility, listed) and save only those.

    Unlisting ends the active subscriptions and making it private ends its share link
    (``collection_access_changed``), so undoing the change quietly restores neither. A new
    ``embedding_model`` is not set here: it starts a re-embed (``collection_reindex``), and the
    collection switches to it once every document has its new vectors.
    """
    model = changes.pop("embedding_model", None)
    if model is not None:
        embedding_model_checked(model)
    if "name" in changes:
        changes["name"] = text_clean(changes["name"], field="a collection's name", max_length=200)
        if not changes["name"]:
            raise KnowledgeError("a collection needs a name")
    if "visibility" in changes and changes["visibility"] not in Collection.Visibility.values:
        raise KnowledgeError(f"visibility must be one of {', '.join(Collection.Visibility.values)}")
    if "description" in changes:
        changes["description"] = text_clean(
            changes["description"], field="a collection's description", max_length=MAX_DESCRIPTION
        )
    if "tags" in changes:
        changes["tags"] = _tags_clean(changes["tags"])
    before = audit_values(collection, changes)  # a new model is collection_reindex's own event
    for field, value in changes.items():
        setattr(collection, field, value)
    try:
        with transaction.atomic():
            _save_changes(collection, changes, model, before)
            changed = audit_changes(before, audit_values(collection, changes))
            if changed:
                audit_record(action="collection.changed", obj=collection, changes=changed)
    except IntegrityError:
        if "name" not in changes:
            raise
        collection.refresh_from_db()
        raise KnowledgeError(f"a collection named {changes['name']!r} already exists") from None
    return collection


def _save_changes(collection: Collection, changes: dict, model: str | None, before: dict) -> None:
    """Save ``changes``; a duplicate name raises IntegrityError (the owner's names are unique)."""
    collection.save(update_fields=[*changes, "updated_at"])
    collection_access_changed(collection=collection, before=before)
    if model is not None:
        collection_reindex(collection=collection, embedding_model=model)
        collection.refresh_from_db()


def collection_access_changed(*, collection: Collection, before: dict) -> None:
    """What a saved change of who may read ``collection`` takes away, whichever path saved it (this
    module's ``collection_update``, the admin); ``before`` holds the changed fields' earlier values.

    Unlisting ends the active subscriptions: relisting does not bring them back. Making it private
    rotates its share link, which drops every grant: made unlisted again, it opens to nobody until
    they open its new link (with the old token kept, a holder's grant, or the old link opened anew,
    would let them back in without the owner sharing it again).
    """
    if "listed" in before and not collection.listed:
        subscriptions_end_all(collection=collection)
    private = Collection.Visibility.PRIVATE
    if before.get("visibility", private) != private and collection.visibility == private:
        rotated = collection_link_rotate(collection=collection, reason="made private")
        collection.share_token = rotated.share_token


def _tags_clean(tags) -> list[str]:
    if not isinstance(tags, list) or len(tags) > MAX_TAGS:
        raise KnowledgeError(f"tags are a list of at most {MAX_TAGS}")
    return [text_clean(tag, field="a tag", required=True, max_length=50) for tag in tags]


def collection_delete(*, collection: Collection) -> None:
    """Delete the collection (documents and chunks cascade), then its stored originals."""
    with transaction.atomic():
        document_files_delete_on_commit(documents=collection.documents.only("id", "file"))
        audit_record(action="collection.deleted", obj=collection)
        collection.delete()


_PENDING_FIELDS = ["pending_chunk_profile", "pending_embedding_model", "updated_at"]


@transaction.atomic
def collection_reindex(
    *,
    collection: Collection,
    chunk_profile: ChunkProfile | None = None,
    embedding_model: str | None = None,
    actor=None,
) -> int:
    """Build a candidate release under ``chunk_profile`` and ``embedding_model`` (each defaults to
    the one a re-index in progress targets, else the collection's current one: a re-index of the
    profile keeps a model change going, and the other way round).

    The serving release answers until every document has its new chunks; then the gate measures
    the candidate and promotes or holds it (see knowledge.ingestion.reindex). Asking for the
    serving profile and model cancels a release being built or held; asking again for the one
    being built joins it (``_build_joined``). Returns the number of documents queued.
    """
    collection = Collection.objects.select_for_update().get(pk=collection.pk)
    serving_release(collection)
    profile_id = chunk_profile.pk if chunk_profile else _pending_or_current_profile(collection)
    model = (
        embedding_model_checked(embedding_model) if embedding_model else _pending_or_current_model(collection)
    )
    if release_building(collection, (profile_id, model)):
        return _build_joined(collection, profile_id, model)
    collection.pending_chunk_profile_id = profile_id if profile_id != collection.chunk_profile_id else None
    collection.pending_embedding_model = model if model != collection.embedding_model else ""
    collection.reindex_error = ""  # a stopped re-index's reason stands until the next is asked for
    collection.save(update_fields=[*_PENDING_FIELDS, "reindex_error"])
    targets = {"chunk_profile": [collection.chunk_profile_id, profile_id]}
    targets["embedding_model"] = [collection.embedding_model, model]
    audit_record(action="collection.reindexed", obj=collection, changes=targets)
    if collection.reindex_target is None:
        releases_unbuilt_discard(collection, reason="cancelled: the serving profile and model were asked for")
        return 0
    release = release_build_start(collection=collection, chunk_set=(profile_id, model), created_by=actor)
    document_ids = list(
        Document.objects.filter(collection=collection)
        .exclude(status=Document.Status.FAILED)
        .values_list("pk", flat=True)
    )
    # Queued with the target's profile: that is how a run knows it writes the new set (pipeline).
    for document_id in document_ids:
        enqueue_document_processing(document_id=document_id, chunk_profile_id=profile_id)
    if not document_ids:  # nothing to build or measure: the empty release serves at once
        release_promote(release=release, reason="the collection has no documents: nothing to measure")
    return len(document_ids)


def _build_joined(collection: Collection, profile_id: int, model: str) -> int:
    """The re-index being built, asked for again: the same release goes on (starting it afresh would
    throw away what is built and queue every document again). Only a document that lacks its set
    with no run of it queued or running is queued (its run was lost or failed). Returns how many."""
    live = ProcessingJob.objects.filter(
        document=OuterRef("pk"),
        chunk_profile_id=profile_id,
        state__in=[ProcessingJob.State.QUEUED, ProcessingJob.State.RUNNING],
    )
    waiting = (
        documents_lacking(collection, (profile_id, model))
        .exclude(status=Document.Status.FAILED)
        .exclude(Exists(live))
        .values_list("pk", flat=True)
    )
    return sum(enqueue_document_processing(document_id=pk, chunk_profile_id=profile_id) for pk in waiting)


@transaction.atomic
def collection_reprocess(*, collection: Collection) -> int:
    """Re-chunk and re-embed every document under the current profile (after an extractor or model change).

    Each document's chunks are replaced in one step by the pipeline, so search
    keeps working meanwhile. Failed documents are left for "retry". Returns the
    number of documents queued: one still waiting for its run joins it and is not counted.
    """
    documents = (
        Document.objects.filter(collection=collection)
        .exclude(status=Document.Status.FAILED)
        .select_related("collection")
    )
    return sum(document_reindex_queued(document=document) for document in documents)


def collection_reindex_asked(
    *, user, collection: Collection, chunk_profile: ChunkProfile | None = None
) -> int:
    """A re-index ``user`` asked for on a page, the API or MCP: one write of their rate, then under
    ``chunk_profile`` (``collection_reindex``), or with none, every document read again under the
    current profile (``collection_reprocess``). Returns the number of documents queued.

    Callers check access and the request first: a refused ask costs nothing, an accepted one the
    same on every path, even when it only joins a re-index already under way.
    """
    reindex_charge(user=user)
    if chunk_profile is None:
        return collection_reprocess(collection=collection)
    return collection_reindex(collection=collection, chunk_profile=chunk_profile, actor=user)


def collection_find(name: str, *, owner=None, any_owner: bool = False) -> Collection:
    """A collection by name for operator commands: ``owner``'s, else admin-owned, else a unique match."""
    matches = Collection.objects.filter(name=name)
    exact = matches.filter(owner=owner).first()
    if exact or not any_owner:
        if exact is None:
            whose = f"owned by {owner.username}" if owner else "admin-owned"
            raise NotFoundError(f"no {whose} collection named {name!r}")
        return exact
    found = list(matches.select_related("owner"))
    if not found:
        raise NotFoundError(f"no collection named {name!r}")
    if len(found) > 1:
        owners = ", ".join(c.owner.username if c.owner else "admin" for c in found)
        raise KnowledgeError(f"several collections are named {name!r} (owners: {owners}); pass --user")
    return found[0]


def _pending_or_current_profile(collection: Collection) -> int:
    return collection.pending_chunk_profile_id or collection.chunk_profile_id


def _pending_or_current_model(collection: Collection) -> str:
    return collection.pending_embedding_model or collection.embedding_model
