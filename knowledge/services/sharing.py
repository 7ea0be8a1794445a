"""Share links of unlisted collections: opening one (a grant), rotating one (dropping every grant).

Making a collection private rotates its link too (knowledge.services.collections,
``collection_access_changed``): a spell of "private" ends every grant for good, and the old link
opens nothing when the collection is unlisted again.

Who may read what is decided in knowledge.access; these services only write
the grants that rule reads.

Every service that grants or takes away a user's access to a collection (opening a link,
subscribing, unsubscribing, revoking, reinstating, rotating the link, unlisting, making it private)
first locks the collection's row (``collection_access_lock``) and decides on what it reads after
the lock. Two decisions about one collection therefore never interleave: a link opened while the
owner revokes either commits its grant before the revocation (which then deletes it) or waits and
is refused.
"""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse

from accounts.audit import CHANGED, audit_record
from config.base.errors import NotFoundError
from knowledge.access import collection_for_link, collection_is_readable
from knowledge.models import Collection, LinkGrant
from knowledge.models.collections import new_share_token


def collection_link_preview(*, user, share_token: str) -> tuple[Collection, bool]:
    """The collection a link opens and whether ``user`` reads it already; records nothing.

    Following a link must not open it: a page can navigate a signed-in visitor to any link, so
    only a deliberate POST (``collection_link_open``) records the grant.
    """
    collection = collection_for_link(user=user, share_token=share_token)
    return collection, collection_is_readable(user=user, collection=collection)


def collection_access_lock(*, collection_id: int) -> Collection:
    """The collection, its row locked until the transaction ends: taken before any grant or revocation.

    ``FOR NO KEY UPDATE`` conflicts with itself (so access decisions on one collection queue up)
    but not with the key-share locks that inserting a document or grant row takes.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("collection_access_lock needs a transaction: the lock ends with it")
    collection = Collection.objects.select_for_update(no_key=True).filter(pk=collection_id).first()
    if collection is None:
        raise NotFoundError("no such collection")  # deleted since it was looked up
    return collection


@transaction.atomic
def collection_link_open(*, user, share_token: str) -> Collection:
    """Record that ``user`` holds the link, so the collection opens by id from now on; returns it.

    Callers reach this only from a POST (CSRF-checked for cookie sessions); see ``collection_link_preview``.
    The link is checked again under the collection's lock: a revocation or rotation that
    committed meanwhile refuses it instead of leaving a grant beside it.
    """
    found = collection_for_link(user=user, share_token=share_token)
    collection_access_lock(collection_id=found.pk)
    collection = collection_for_link(user=user, share_token=share_token)
    if collection_is_readable(user=user, collection=collection):
        return collection  # the owner, a subscriber, a public collection: nothing to record
    _, created = LinkGrant.objects.get_or_create(user=user, collection=collection)
    if created:
        audit_record(action="share_link.opened", obj=collection, default_actor=user)
    return collection


@transaction.atomic
def collection_link_rotate(*, collection: Collection, reason: str = "") -> Collection:
    """A new share link; whoever opened the old one loses access at once (their grants are dropped).

    ``reason`` says, in the audit log, why it was rotated when the owner did not ask for it directly.
    """
    collection = collection_access_lock(collection_id=collection.pk)
    collection.share_token = new_share_token()
    collection.save(update_fields=["share_token", "updated_at"])
    dropped, _ = LinkGrant.objects.filter(collection=collection).delete()
    # The token itself is a secret: only that it changed, and how many lost access.
    changes = {"share_token": [CHANGED, CHANGED], "grants_dropped": [dropped, 0]}
    if reason:
        changes["reason"] = [None, reason]
    audit_record(action="share_link.rotated", obj=collection, changes=changes)
    return collection


def collection_share_path(*, collection: Collection) -> str:
    """The page address of the share link (the API opens the same token under /api/v1/collections/link/)."""
    return reverse("knowledge:collection_link", kwargs={"share_token": collection.share_token})
