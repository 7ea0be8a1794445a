"""The one place that decides which collections (and so documents and chunks) and profiles a user may use.

Pages, the API, retrieval SQL, chat and the admin all call these functions;
none of them re-implements the rule. Visibility (docs/design.md#access):

    private   owner only (plus active subscribers while the collection is listed)
    unlisted  owner, and whoever opened its share link (a LinkGrant) while the
              link was current; knowing the (sequential) id gives nothing
    public    every signed-in user
    no owner  admin-owned: every signed-in user
    any       and members of a group (team) the collection is shared with

Team membership is Django's own (``auth.Group``, ``user.groups``), read by the SQL at query time:
removing someone from a group takes the collection away at their next request.

Changing a collection is split in two:

    content writers  the owner (staff for admin-owned) and members of a group it is shared with
                     for writing: upload, delete, retry and re-index documents; add, sync and remove
                     its sources (a source only adds and removes documents)
    managers         the owner (staff for admin-owned) only: name, description, tags, visibility,
                     embedding model, marketplace listing, share link, subscriptions, team shares,
                     deleting the collection

A user's library is everything they may read. Rotating the share link drops
every grant; an owner's revocation of a subscription also drops that user's
grant and keeps them out until the owner reinstates them.

Profiles: a user reads and uses their own and the operator's (no owner); they
change their own, and staff change the operator's.

Chat sessions and their turns belong to the user who asked: anyone else's are
"not found", for reading and for changing alike.

One question's scope (a profile, collections, or the session it continues) is
resolved once, at the edge that received it (``question_scope_checked``), into a
QuestionScope every later step takes; each kind of unreadable id has one message:
"no such profile", "no such collection: ID", "no such chat session".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from django.contrib.auth import get_user_model
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import JSONObject

from config.base.errors import ForbiddenError, KnowledgeError, NotFoundError
from config.base.prepared import planned_once_cursor
from config.base.validation import id_or_none
from knowledge.models import (
    ChatSession,
    ChatTurn,
    Chunk,
    Collection,
    CollectionShare,
    Document,
    LinkGrant,
    Profile,
    Source,
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


def _team_shares(user, **also) -> QuerySet[CollectionShare]:
    """Shares of the outer collection with a group ``user`` is in now: membership is a join, not a list.

    The join is part of the SQL (never the user's group ids read in Python), so the compiled text
    ``_readable_chunk_sets_sql`` keeps stays right after a membership change.
    """
    memberships = get_user_model().groups.through.objects.filter(user=user).values("group_id")
    return CollectionShare.objects.filter(collection=OuterRef("pk"), group__in=memberships, **also)


def _readable_q(user) -> Q:
    return (
        Q(owner__isnull=True)
        | Q(owner=user)
        | Q(visibility=Collection.Visibility.PUBLIC)
        | Q(visibility=Collection.Visibility.UNLISTED, _link_granted=True)
        | Q(_subscribed=True)
        | Q(_team_shared=True)
    )


def readable_collections(user) -> QuerySet[Collection]:
    """Collections whose content ``user`` may read; an unlisted one only after opening its share link."""
    if user is None or not user.is_authenticated:
        return Collection.objects.none()
    return _readable_collections_of(user.pk)


def _readable_collections_of(user_id: int) -> QuerySet[Collection]:
    return Collection.objects.alias(
        _subscribed=_active_subscription(user_id),
        _link_granted=_link_granted(user_id),
        _team_shared=Exists(_team_shares(user_id)),
    ).filter(_readable_q(user_id))


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


def collection_is_manageable(*, user, collection: Collection) -> bool:
    """Managers: the owner; staff for an admin-owned collection. Team shares never make a manager."""
    if user is None or not user.is_authenticated:
        return False
    if collection.owner_id is None:
        return user.is_staff
    return collection.owner_id == user.pk


def collection_is_content_writable(*, user, collection: Collection) -> bool:
    """Content writers: its managers, and members of a group it is shared with for writing."""
    if collection_is_manageable(user=user, collection=collection):
        return True
    if user is None or not user.is_authenticated:
        return False
    return CollectionShare.objects.filter(collection=collection, group__user=user, can_write=True).exists()


def collection_team_access(queryset: QuerySet[Collection], *, user) -> QuerySet[Collection]:
    """Annotates ``team_access``: ``user``'s groups each collection is shared with, as
    ``{"id", "name", "can_write"}`` rows (empty when none): how a team member reaches it."""
    if user is None or not user.is_authenticated:
        return queryset
    rows = (
        _team_shares(user.pk)
        .order_by("group__name")
        .values(row=JSONObject(id="group_id", name="group__name", can_write="can_write"))
    )
    return queryset.annotate(team_access=ArraySubquery(rows))


# A readable collection's serving chunk set: (collection id, chunk profile id, embedding model).
ChunkSet = tuple[int, int, str]


def readable_collection_ids_checked(*, user, collection_ids: list[int]) -> list[int]:
    """The ids, if ``user`` may read every one; an unreadable id is reported exactly like a missing one."""
    return [row[0] for row in _readable_chunk_sets_checked(user, collection_ids)]


def _readable_chunk_sets_checked(user, collection_ids) -> tuple[ChunkSet, ...]:
    """The serving chunk sets of ``collection_ids`` (each once, in order), if ``user`` may read every one."""
    wanted = list(dict.fromkeys(collection_ids))
    found = {row[0]: row for row in _readable_chunk_sets(user, tuple(wanted))}
    missing = [cid for cid in wanted if cid not in found]
    if missing:
        raise NotFoundError(f"no such collection: {missing[0]}")
    return tuple(found[cid] for cid in wanted)


def _readable_chunk_sets(user, wanted: tuple[int, ...]) -> list[ChunkSet]:
    """The serving chunk sets of those of ``wanted`` that ``user`` may read: the rule's SQL, compiled
    once per user and ids.

    Compiling the rule (its EXISTS subqueries) cost more CPU than anything else in a
    retrieve request (py-spy under load); the SQL depends only on the user's and the
    collections' ids, so the compiled text is kept and the check itself runs every time.
    Team membership is joined inside that SQL, never baked into it: a removed member is
    refused by the very next check. The chunk sets come with the check so that a search can
    pin them without reading the same rows again (``Scope.of_chunk_sets``).
    """
    if user is None or not user.is_authenticated or not wanted:
        return []
    sql, params = _readable_chunk_sets_sql(user.pk, wanted)
    with planned_once_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@lru_cache(maxsize=1024)
def _readable_chunk_sets_sql(user_id: int, wanted: tuple[int, ...]) -> tuple[str, tuple]:
    rows = _readable_collections_of(user_id).filter(pk__in=wanted).order_by()
    return rows.values_list("pk", "chunk_profile_id", "embedding_model").query.sql_with_params()


def collection_for_reader(*, user, collection_id) -> Collection:
    """The collection if ``user`` may read it; otherwise NotFound (never 'forbidden')."""
    collection = readable_collections(user).filter(pk=collection_id).select_related("chunk_profile").first()
    if collection is None:
        raise NotFoundError("no such collection")
    return collection


def collection_for_content_writer(*, user, collection_id) -> Collection:
    """The collection if ``user`` may change its documents and sources; else NotFound or Forbidden."""
    collection = collection_for_reader(user=user, collection_id=collection_id)
    if not collection_is_content_writable(user=user, collection=collection):
        raise ForbiddenError(
            "only the collection's owner, or a team it is shared with for writing, can change it"
        )
    return collection


def collection_for_manager(*, user, collection_id) -> Collection:
    """The collection if ``user`` manages it (settings and sharing); else NotFound or Forbidden."""
    collection = collection_for_reader(user=user, collection_id=collection_id)
    if not collection_is_manageable(user=user, collection=collection):
        raise ForbiddenError("only the collection's owner can change its settings and sharing")
    return collection


def document_for_reader(*, user, document_id) -> Document:
    """The document if ``user`` may read its collection; otherwise NotFound."""
    return _readable_row(Document, user, document_id, related="collection", missing="no such document")


def chunk_for_reader(*, user, chunk_id) -> Chunk:
    """The chunk (with its document) if ``user`` may read its collection; otherwise NotFound."""
    # Chunk ids change when a document is re-indexed; the citation's document and source_ref do not.
    missing = (
        "no such passage (chunk ids change when a document is re-indexed: ask by document and source_ref)"
    )
    return _readable_row(Chunk, user, chunk_id, related="document", missing=missing)


def _readable_row(model, user, pk, *, related: str, missing: str):
    row = (
        model.objects.filter(pk=pk, collection__in=readable_collections(user)).select_related(related).first()
    )
    if row is None:
        raise NotFoundError(missing)
    return row


def readable_documents(*, user, collection_ids=None) -> QuerySet[Document]:
    """Ready documents ``user`` may read, within ``collection_ids`` (the router's candidates)."""
    collections = readable_collections(user)
    if collection_ids is not None:
        collections = collections.filter(pk__in=list(collection_ids))
    return Document.objects.filter(collection__in=collections, status=Document.Status.READY)


def document_for_content_writer(*, user, document_id) -> Document:
    """The document if ``user`` writes its collection's content; unreadable NotFound, else Forbidden."""
    document = document_for_reader(user=user, document_id=document_id)
    collection_for_content_writer(user=user, collection_id=document.collection_id)
    return document


def source_for_reader(*, user, source_id) -> Source:
    """A collection's source, if ``user`` may read the collection; otherwise NotFound."""
    return _readable_row(Source, user, source_id, related="collection", missing="no such source")


def source_for_content_writer(*, user, source_id) -> Source:
    """A source its collection's content writers may sync, change and remove."""
    source = source_for_reader(user=user, source_id=source_id)
    collection_for_content_writer(user=user, collection_id=source.collection_id)
    return source


def profiles_for_user(user) -> QuerySet[Profile]:
    """Profiles ``user`` may read and ask with: their own and the operator's (no owner)."""
    if user is None or not user.is_authenticated:
        return Profile.objects.none()
    return Profile.objects.filter(Q(owner=user) | Q(owner__isnull=True))


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
    """``user``'s own chat session; anyone else's or a non-numeric id is NotFound (never forbidden)."""
    session_id = id_or_none(session_id)
    if session_id is None:
        raise NotFoundError("no such chat session")
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


@dataclass(frozen=True)
class QuestionScope:
    """What one question searches, resolved once at the edge; later steps take it and look nothing up.

    ``collection_ids`` are the ones asked for (with a profile they narrow it), as a new session
    stores them; ``search_ids`` are the collections searched and ``rerank_ids`` those whose results
    the LLM may rerank (the profile's choice). ``chunk_sets`` are the readable ones' chunk sets
    (collection id, chunk profile id, embedding model), read by the access check: every search of the
    question reads these releases, even when one is promoted meanwhile. A scope never widens what its
    user reads: it is made only by ``question_scope_checked``.
    """

    profile: Profile | None
    collection_ids: tuple[int, ...] | None
    search_ids: tuple[int, ...]
    rerank_ids: frozenset[int]
    session: ChatSession | None = None
    chunk_sets: tuple[ChunkSet, ...] = ()

    def on_chunk_set(self, *, chunk_profile_id: int | None = None, embedding_model: str | None = None):
        """The same collections searched in another chunk set than their serving one: a candidate
        release, or a chunk profile being evaluated. Access is unchanged."""
        return replace(
            self,
            chunk_sets=tuple(
                (
                    collection_id,
                    profile_id if chunk_profile_id is None else chunk_profile_id,
                    model if embedding_model is None else embedding_model,
                )
                for collection_id, profile_id, model in self.chunk_sets
            ),
        )


def _scope_of(profile: Profile | None, collection_ids=None, session=None) -> QuestionScope:
    """The collections a profile (narrowed to ``collection_ids``), or the given collections, searches,
    before their chunk sets are read. Nothing to search is bad input."""
    asked = None if collection_ids is None else tuple(dict.fromkeys(int(c) for c in collection_ids))
    if profile is None:
        if not asked:
            raise KnowledgeError("choose a profile or at least one collection to search")
        return QuestionScope(None, asked, asked, frozenset(), session)
    links = list(profile.profile_collections.values_list("collection_id", "reranking"))
    ids = tuple(cid for cid, _ in links if asked is None or cid in asked)
    if asked is not None and not ids:
        raise KnowledgeError("none of the requested collections is in the profile; ask them directly")
    if not ids:
        raise KnowledgeError("the profile has no collections to search; add a collection to it first")
    return QuestionScope(profile, asked, ids, frozenset(cid for cid, wanted in links if wanted), session)


def question_scope_checked(*, user, profile=None, collection_ids=None, session=None) -> QuestionScope:
    """One question's scope for ``user``, with the chunk sets it searches: what pages, the API, MCP,
    the commands and the evaluation ask with.

    ``profile`` is a Profile or its id, ``session`` a ChatSession or its id; the profile must be
    theirs to use, the session their own and every named collection readable, checked in the order
    the API documents its fields: profile, collections, session. With neither a profile nor
    collections, the question searches what its session searched. A profile's collections that are
    no longer readable are left out of its search.
    """
    profile = _usable_profile(user, profile)
    checked = None
    if collection_ids is not None:
        checked = _readable_chunk_sets_checked(user, collection_ids)
        collection_ids = [row[0] for row in checked]
    scope = _question_scope(user, profile, collection_ids, session)
    if checked is None:
        checked = _readable_chunk_sets(user, scope.search_ids)
        if not checked and scope.profile is None:
            # A resumed session's own collections may have become unreadable since it was saved.
            raise KnowledgeError(SESSION_SCOPE_LOST)
    return replace(scope, chunk_sets=tuple(row for row in checked if row[0] in scope.search_ids))


# A resumed conversation whose collections were all unsubscribed, unshared or deleted since.
SESSION_SCOPE_LOST = (
    "you can no longer read the collections this conversation searched; choose other collections to go on"
)


def session_scope_readable(*, user, session: ChatSession) -> list[Collection]:
    """The collections a resumed session searches that ``user`` may still read (its profile's, or its own)."""
    if session.profile_id:
        return []
    return list(listed_collections(user).filter(pk__in=session.collection_ids).order_by("name"))


def _usable_profile(user, profile) -> Profile | None:
    return (
        None if profile is None else profile_for_reader(user=user, profile_id=getattr(profile, "pk", profile))
    )


def _question_scope(user, profile: Profile | None, collection_ids, session) -> QuestionScope:
    if session is not None:
        session = chat_session_for_owner(user=user, session_id=getattr(session, "pk", session))
        if profile is None and collection_ids is None:
            profile = _usable_profile(user, session.profile_id)
            collection_ids = session.collection_ids or None
    return _scope_of(profile, collection_ids, session)
