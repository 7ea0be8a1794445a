"""Marketplace: listed collections, and subscriptions to them (services and selectors).

Which listings a user sees, and what a subscription lets them read, is decided
in knowledge.access; this module only shapes the listing and writes subscriptions.
Subscribing and unsubscribing count against the user's "writes" rate here, so every path
(the pages, the API) is counted alike (accounts.throttles).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import CharField, Exists, F, Func, OuterRef, Q, QuerySet, Value
from django.utils import timezone

from accounts.audit import audit_record, audit_record_each
from accounts.throttles import user_throttle_charge
from config.base.errors import ForbiddenError, KnowledgeError, NotFoundError
from config.base.validation import text_clean
from knowledge.access import (
    collection_is_manageable,
    marketplace_listing_for,
    marketplace_listings,
    readable_collections,
)
from knowledge.models import Collection, Document, LinkGrant, Subscription
from knowledge.services.queries import count_subquery
from knowledge.services.sharing import collection_access_lock


def _tags_text():
    return Func(F("tags"), Value(" "), function="array_to_string", output_field=CharField())


def marketplace_collections(*, user, search: str = "") -> QuerySet[Collection]:
    """Listed collections with owner, counts and ``subscribed``; ``search`` matches name, description, tag."""
    active = Subscription.objects.filter(collection=OuterRef("pk"), is_active=True)
    queryset = (
        marketplace_listings(user)
        .select_related("owner")
        .annotate(
            # Searchable documents only: failed or still-processing ones answer nothing yet.
            document_count=count_subquery(
                Document.objects.filter(collection=OuterRef("pk"), status=Document.Status.READY),
                group_by="collection",
            ),
            subscriber_count=count_subquery(active, group_by="collection"),
            subscribed=Exists(active.filter(user=user)),
            revoked=Exists(
                Subscription.objects.filter(collection=OuterRef("pk"), user=user, revoked_at__isnull=False)
            ),
            can_read=Exists(readable_collections(user).filter(pk=OuterRef("pk"))),
        )
        .order_by("name", "pk")
    )
    term = text_clean(search, field="the search", max_length=200)
    if term:
        queryset = queryset.alias(tags_text=_tags_text()).filter(
            Q(name__icontains=term) | Q(description__icontains=term) | Q(tags_text__icontains=term)
        )
    return queryset


def subscribed_collections(*, user) -> QuerySet[Collection]:
    """The listed collections ``user`` actively subscribes to (the marketplace's "Subscribed" section)."""
    return marketplace_collections(user=user).filter(subscribed=True)


def subscription_create(*, user, collection: Collection) -> tuple[Subscription, bool]:
    """Subscribe ``user``: idempotent; re-activates an ended, not a revoked, one. Returns (row, changed)

    Each subscribe counts against ``user``'s write rate, on every path (``_subscription_charge``).
    """
    _subscription_charge(user)
    return _subscription_create(user=user, collection=collection)


def _subscription_charge(user) -> None:
    # Every change writes an audit record that is never deleted: a loop of subscribe and unsubscribe
    # would grow the log without bound. Charged before the transaction, so the count stands whatever
    # the subscription's own outcome, and the user's rate row is not held locked while it runs.
    user_throttle_charge(user=user, scope="writes")


@transaction.atomic
def _subscription_create(*, user, collection: Collection) -> tuple[Subscription, bool]:
    collection_access_lock(collection_id=collection.pk)  # see knowledge.services.sharing
    collection = marketplace_listing_for(user=user, collection_id=collection.pk)  # as of the lock
    if collection.owner_id is not None and collection.owner_id == user.pk:
        raise KnowledgeError("you own this collection; there is nothing to subscribe to")
    subscription, created = Subscription.objects.get_or_create(user=user, collection=collection)
    if created:
        audit_record(action="subscription.created", obj=subscription, default_actor=user)
        return subscription, True
    subscription = Subscription.objects.select_for_update().get(pk=subscription.pk)
    if subscription.revoked_at is not None:
        raise ForbiddenError("the owner revoked your subscription; only they can let you back in")
    if subscription.is_active:
        return subscription, False
    subscription.is_active = True
    subscription.save(update_fields=["is_active", "updated_at"])
    audit_record(action="subscription.created", obj=subscription, default_actor=user)
    return subscription, True


def subscription_end(*, user, collection: Collection) -> bool:
    """End ``user``'s subscription (idempotent); access ends with it. True if one was active.

    Counts against ``user``'s write rate, as subscribing does.
    """
    _subscription_charge(user)
    return _subscription_end(user=user, collection=collection)


@transaction.atomic
def _subscription_end(*, user, collection: Collection) -> bool:
    collection_access_lock(collection_id=collection.pk)
    active = Subscription.objects.filter(user=user, collection=collection, is_active=True).first()
    if active is None:
        return False
    Subscription.objects.filter(pk=active.pk).update(is_active=False)
    audit_record(action="subscription.ended", obj=active, default_actor=user)
    return True


def subscription_collection_for(*, user, collection_id) -> Collection:
    """A listed collection, or one ``user`` holds a subscription to (so they can leave an unlisted one)."""
    try:
        return marketplace_listing_for(user=user, collection_id=collection_id)
    except NotFoundError:
        subscription = Subscription.objects.filter(user=user, collection_id=collection_id).first()
        if subscription is None:
            raise
        return subscription.collection


def collection_subscriptions(*, collection: Collection) -> QuerySet[Subscription]:
    """Every subscription to ``collection`` (active and ended), for its owner."""
    return collection.subscriptions.select_related("user", "collection").order_by(
        "-is_active", "user__username"
    )


@transaction.atomic
def subscriptions_end_all(*, collection: Collection) -> int:
    """Unlisting ends every active subscription: relisting does not bring them back (each subscribes anew)."""
    collection_access_lock(collection_id=collection.pk)
    ending = list(Subscription.objects.filter(collection=collection, is_active=True).select_related("user"))
    Subscription.objects.filter(pk__in=[s.pk for s in ending]).update(
        is_active=False, updated_at=timezone.now()
    )
    for subscription in ending:
        subscription.is_active = False  # as recorded: "... (ended)"
    # One event each, as when a subscriber leaves, in one INSERT however many subscribers there were.
    audit_record_each(action="subscription.ended", objs=ending, changes={"reason": [None, "unlisted"]})
    return len(ending)


def _owned_subscription(*, owner, subscription_id, collection: Collection | None) -> Subscription:
    """The subscription, its collection's access lock held; "not found" unless ``owner`` manages it."""
    subscriptions = Subscription.objects.all()
    if collection is not None:
        subscriptions = subscriptions.filter(collection=collection)
    collection_id = subscriptions.filter(pk=subscription_id).values_list("collection_id", flat=True).first()
    if collection_id is None:
        raise NotFoundError("no such subscription")
    return _locked_subscription(subscription_id=subscription_id, collection_id=collection_id, owner=owner)


def _locked_subscription(*, subscription_id, collection_id: int, owner=None) -> Subscription:
    """Locks the collection, then the subscription (always in that order, so two never deadlock)."""
    locked = collection_access_lock(collection_id=collection_id)
    if owner is not None and not collection_is_manageable(user=owner, collection=locked):
        raise NotFoundError("no such subscription")
    subscription = (
        Subscription.objects.select_related("collection", "user")
        .select_for_update(of=("self",))
        .filter(pk=subscription_id, collection_id=collection_id)
        .first()
    )
    if subscription is None:
        raise NotFoundError("no such subscription")
    return subscription


@transaction.atomic
def subscription_revoke(*, owner, subscription_id, collection: Collection | None = None) -> Subscription:
    """The owner ends someone's subscription and share-link access; they stay out until reinstated."""
    subscription = _owned_subscription(owner=owner, subscription_id=subscription_id, collection=collection)
    return _revoke(subscription)


def _revoke(subscription: Subscription) -> Subscription:
    if subscription.revoked_at is None:
        subscription.is_active = False
        subscription.revoked_at = timezone.now()
        subscription.save(update_fields=["is_active", "revoked_at", "updated_at"])
        audit_record(action="subscription.revoked", obj=subscription)
    LinkGrant.objects.filter(user=subscription.user, collection=subscription.collection).delete()
    return subscription


@transaction.atomic
def subscription_reinstate(*, owner, subscription_id, collection: Collection | None = None) -> Subscription:
    """The owner lets a revoked subscriber back in: active again while the collection is listed."""
    subscription = _owned_subscription(owner=owner, subscription_id=subscription_id, collection=collection)
    return _reinstate(subscription)


def _reinstate(subscription: Subscription) -> Subscription:
    if subscription.revoked_at is not None:
        subscription.revoked_at = None
        subscription.is_active = subscription.collection.listed
        subscription.save(update_fields=["is_active", "revoked_at", "updated_at"])
        audit_record(action="subscription.reinstated", obj=subscription)
    return subscription


def subscriptions_revoke_as_operator(*, subscription_ids) -> int:
    """The admin's "revoke" action: as the owner's revocation, under the same lock. Returns how many."""
    return _as_operator(_revoke, subscription_ids)


def subscriptions_reinstate_as_operator(*, subscription_ids) -> int:
    """The admin's "reinstate" action: as the owner's reinstatement, under the same lock."""
    return _as_operator(_reinstate, subscription_ids)


@transaction.atomic
def _as_operator(change, subscription_ids) -> int:
    # Locked in collection order, as every other path locks, so two admins cannot deadlock.
    rows = Subscription.objects.filter(pk__in=subscription_ids).values_list("pk", "collection_id")
    changed = 0
    for subscription_id, collection_id in sorted(rows, key=lambda row: row[1]):
        try:
            subscription = _locked_subscription(subscription_id=subscription_id, collection_id=collection_id)
        except NotFoundError:
            continue  # deleted (with its collection, perhaps) since it was selected: nothing to change
        change(subscription)
        changed += 1
    return changed
