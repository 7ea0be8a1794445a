"""The one place that decides which collections (and so documents and chunks) and profiles a user may use.

Pages, the API, retrieval SQL, chat and the admin all call these functions;
none of them re-implements the rule. Visibility (docs/design.md#access):

    private   owner only (plus active subscribers while the collection is listed)
    unlisted  owner, and whoever opened its share link (a LinkGrant) while the
              link was current; knowing the (sequential) id gives nothing
    public    every signed-in user
    no owner  admin-owned: every signed-in user

A user's library is everything they may read. Rotating the share link drops
every grant; an owner's revocation of a subscription also drops that user's
grant and keeps them out until the owner reinstates them.

Profiles: a user reads and uses their own and the operator's (no owner); they
change their own, and staff change the operator's.

Chat sessions and their turns belong to the user who asked: anyone else's are
"not found", for reading and for changing alike.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from config.errors import ForbiddenError, NotFoundError
from knowledge.models import (
    ChatSession,
    ChatTurn,
    Chunk,
    Collection,
    Document,
    LinkGrant,
    Profile,
    Subscription,
)

SHARE_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _active_subscription(user) -> Exists:
    return Exists(
        Subscription.objects.filter(
            collection=OuterRef("pk"), user=user, is_active=True, collection__listed=True
        )
    )


def _link_granted(user) -> Exists:
    return Exists(LinkGrant.objects.filter(collection=OuterRef("pk"), user=user))


def _readable_q(user) -> Q:
    return (
        Q(owner__isnull=True)
        | Q(owner=user)
        | Q(visibility=Collection.Visibility.PUBLIC)
        | Q(visibility=Collection.Visibility.UNLISTED, _link_granted=True)
        | Q(_subscribed=True)
    )


def readable_collections(user) -> QuerySet[Collection]:
    """Collections whose content ``user`` may read; an unlisted one only after opening its share link."""
    if user is None or not user.is_authenticated:
        return Collection.objects.none()
    return Collection.objects.alias(
        _subscribed=_active_subscription(user), _link_granted=_link_granted(user)
    ).filter(_readable_q(user))


def listed_collections(user) -> QuerySet[Collection]:
    """``user``'s library: every collection they may read (an unlisted one once its link is opened)."""
    return readable_collections(user)


def collection_is_readable(*, user, collection: Collection) -> bool:
    return readable_collections(user).filter(pk=collection.pk).exists()


def collection_for_link(*, user, share_token: str) -> Collection:
    """The collection a share link opens: an unlisted one, or one ``user`` reads anyway; else NotFound.

    Someone whose subscription the owner revoked is refused (Forbidden): the link does not let them back in.
    """
    token = share_token or ""
    if not token or len(token) > 64 or not set(token) <= SHARE_TOKEN_CHARS:
        raise NotFoundError("no such collection link")
    collection = Collection.objects.filter(share_token=token).first()
    if collection is None or user is None or not user.is_authenticated:
        raise NotFoundError("no such collection link")
    if collection_is_readable(user=user, collection=collection):
        return collection
    if collection.visibility != Collection.Visibility.UNLISTED:
        raise NotFoundError("no such collection link")  # a private collection's link opens nothing
    if Subscription.objects.filter(user=user, collection=collection, revoked_at__isnull=False).exists():
        raise ForbiddenError("the owner revoked your access to this collection; only they can let you in")
    return collection


def collection_is_writable(*, user, collection: Collection) -> bool:
    """Owners manage their collections; admin-owned ones are managed by staff."""
    if user is None or not user.is_authenticated:
        return False
    if collection.owner_id is None:
        return user.is_staff
    return collection.owner_id == user.pk


def readable_collection_ids(user) -> QuerySet:
    """A subquery of readable collection ids, for use inside retrieval SQL."""
    return readable_collections(user).values("pk")


def readable_collection_ids_checked(*, user, collection_ids: list[int]) -> list[int]:
    """The ids, if ``user`` may read every one; an unreadable id is reported exactly like a missing one."""
    wanted = list(dict.fromkeys(collection_ids))
    found = set(readable_collections(user).filter(pk__in=wanted).values_list("pk", flat=True))
    missing = [cid for cid in wanted if cid not in found]
    if missing:
        raise NotFoundError(f"no such collection: {missing[0]}")
    return wanted


def collection_for_reader(*, user, collection_id) -> Collection:
    """The collection if ``user`` may read it; otherwise NotFound (never 'forbidden')."""
    collection = readable_collections(user).filter(pk=collection_id).select_related("chunk_profile").first()
    if collection is None:
        raise NotFoundError("no such collection")
    return collection


def collection_for_writer(*, user, collection_id) -> Collection:
    """The collection if ``user`` may change it; unreadable ones are NotFound, readable ones Forbidden."""
    collection = collection_for_reader(user=user, collection_id=collection_id)
    if not collection_is_writable(user=user, collection=collection):
        raise ForbiddenError("only the collection's owner can change it")
    return collection


def document_for_reader(*, user, document_id) -> Document:
    """The document if ``user`` may read its collection; otherwise NotFound."""
    document = (
        Document.objects.filter(pk=document_id, collection__in=readable_collections(user))
        .select_related("collection")
        .first()
    )
    if document is None:
        raise NotFoundError("no such document")
    return document


def chunk_for_reader(*, user, chunk_id) -> Chunk:
    """The chunk (with its document) if ``user`` may read its collection; otherwise NotFound."""
    chunk = (
        Chunk.objects.filter(pk=chunk_id, collection__in=readable_collections(user))
        .select_related("document")
        .first()
    )
    if chunk is None:
        raise NotFoundError("no such passage")
    return chunk


def readable_documents(*, user, collection_ids=None) -> QuerySet[Document]:
    """Ready documents ``user`` may read, within ``collection_ids`` (the router's candidates)."""
    collections = readable_collections(user)
    if collection_ids is not None:
        collections = collections.filter(pk__in=list(collection_ids))
    return Document.objects.filter(collection__in=collections, status=Document.Status.READY)


def document_for_writer(*, user, document_id) -> Document:
    document = document_for_reader(user=user, document_id=document_id)
    collection_for_writer(user=user, collection_id=document.collection_id)
    return document


def profiles_for_user(user) -> QuerySet[Profile]:
    """Profiles ``user`` may read and ask with: their own and the operator's (no owner)."""
    if user is None or not user.is_authenticated:
        return Profile.objects.none()
    return Profile.objects.filter(Q(owner=user) | Q(owner__isnull=True))


def profile_is_readable(*, user, profile: Profile) -> bool:
    return profiles_for_user(user).filter(pk=profile.pk).exists()


def profile_is_writable(*, user, profile: Profile) -> bool:
    """Owners change their profiles; operator-provided ones (no owner) are changed by staff."""
    if user is None or not user.is_authenticated:
        return False
    if profile.owner_id is None:
        return user.is_staff
    return profile.owner_id == user.pk


def profile_for_reader(*, user, profile_id) -> Profile:
    """The profile if ``user`` may read it; otherwise NotFound (never 'forbidden')."""
    profile = profiles_for_user(user).filter(pk=profile_id).first()
    if profile is None:
        raise NotFoundError("no such profile")
    return profile


def profile_for_writer(*, user, profile_id) -> Profile:
    """The profile if ``user`` may change it; unreadable ones are NotFound, readable ones Forbidden."""
    profile = profile_for_reader(user=user, profile_id=profile_id)
    if not profile_is_writable(user=user, profile=profile):
        raise ForbiddenError("operator-provided profiles are changed by the operator")
    return profile


def marketplace_listings(user) -> QuerySet[Collection]:
    """Collections whose marketplace listing (not content) ``user`` may see: every listed one."""
    if user is None or not user.is_authenticated:
        return Collection.objects.none()
    return Collection.objects.filter(listed=True)


def marketplace_listing_for(*, user, collection_id) -> Collection:
    """A listed collection (any visibility), for subscribing; anything else is NotFound."""
    collection = marketplace_listings(user).filter(pk=collection_id).select_related("owner").first()
    if collection is None:
        raise NotFoundError("no such collection in the marketplace")
    return collection


def chat_session_for_owner(*, user, session_id) -> ChatSession:
    """``user``'s own chat session; anyone else's is NotFound (never 'forbidden')."""
    if user is None or not user.is_authenticated:
        raise NotFoundError("no such chat session")
    session = ChatSession.objects.filter(pk=session_id, user=user).select_related("profile").first()
    if session is None:
        raise NotFoundError("no such chat session")
    return session


def chat_turn_for_owner(*, user, session_id, turn_index) -> ChatTurn:
    """Turn ``turn_index`` (0-based) of ``user``'s own session; anything else is NotFound."""
    session = chat_session_for_owner(user=user, session_id=session_id)
    turn = session.turns.filter(index=turn_index).first()
    if turn is None:
        raise NotFoundError(f"this session has no turn {turn_index}")
    return turn
