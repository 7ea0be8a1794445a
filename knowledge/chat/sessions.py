"""Chat sessions: rename and delete (finding one for its owner, and the scope a question searches, is
knowledge.access: ``chat_session_for_owner``, ``question_scope_checked``)."""

from __future__ import annotations

from config.base.errors import KnowledgeError
from knowledge.models import ChatSession

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
