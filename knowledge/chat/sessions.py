"""Chat sessions: look-up for their owner, the scope a question searches, rename and delete."""

from __future__ import annotations

from config.errors import KnowledgeError, NotFoundError
from knowledge.access import profile_is_readable
from knowledge.models import ChatSession, Profile
from knowledge.retrieval.service import search_collections

MAX_TITLE_CHARS = ChatSession._meta.get_field("title").max_length


def chat_session_rename(*, session: ChatSession, title: str) -> ChatSession:
    """Give the session a new title (whitespace collapsed); an empty one is bad input."""
    title = " ".join((title or "").split())
    if not title:
        raise KnowledgeError("a session needs a title")
    if len(title) > MAX_TITLE_CHARS:
        raise KnowledgeError(f"the title is longer than {MAX_TITLE_CHARS} characters")
    session.title = title
    # update(): renaming must not move the session to the top of the list (updated_at).
    ChatSession.objects.filter(pk=session.pk).update(title=title)
    return session


def chat_session_delete(*, session: ChatSession) -> None:
    """Delete the session and its turns (their ratings go with them)."""
    session.delete()


def session_for(user, session) -> ChatSession:
    """``user``'s session, given as one or as its id."""
    session_id = session.pk if isinstance(session, ChatSession) else session
    return session_get(user=user, session_id=session_id)


def session_get(*, user, session_id) -> ChatSession:
    """``user``'s session; anyone else's is "not found", never "forbidden"."""
    try:
        session_id = int(session_id)
    except (TypeError, ValueError):
        raise NotFoundError("no such chat session") from None
    found = ChatSession.objects.filter(pk=session_id, user=user).select_related("profile").first()
    if found is None:
        raise NotFoundError("no such chat session")
    return found


def chat_scope(user, profile, collection_ids, session) -> tuple[Profile | None, list[int] | None]:
    """The profile and collections one question searches (the session's when none are given)."""
    if profile is None and collection_ids is None and session is not None:
        profile = session.profile
        collection_ids = session.collection_ids or None
    if profile is not None:
        if not profile_is_readable(user=user, profile=profile):
            raise NotFoundError("no such profile")
        collection_ids = None if collection_ids is None else [int(c) for c in collection_ids]
        search_collections(
            profile, collection_ids
        )  # nothing to search is bad input, refused before streaming
        return profile, collection_ids
    if not collection_ids:
        raise KnowledgeError("choose a profile or at least one collection to search")
    return None, [int(c) for c in collection_ids]
