"""Questions asked as an edge asks them: the scope resolved and checked first
(knowledge.access.question_scope_checked), then the chat. Tests name the profile, the collections or
the session the way a page, the API or MCP receives them."""

from __future__ import annotations

from knowledge import chat
from knowledge.access import question_scope_checked
from knowledge.retrieval.request import RetrievalRequest


def chat_ask(*, user, question: str, profile=None, collection_ids=None, session=None, **chat_args):
    asked = question_scope_checked(user=user, profile=profile, collection_ids=collection_ids, session=session)
    return chat.chat_ask(user=user, question=question, asked=asked, **chat_args)


def chat_stream(*, user, question: str, profile=None, collection_ids=None, session=None, **chat_args):
    asked = question_scope_checked(user=user, profile=profile, collection_ids=collection_ids, session=session)
    return chat.chat_stream(user=user, question=question, asked=asked, **chat_args)


def request_for(user, *, question: str, profile=None, collection_ids=None, asked=None, **fields):
    """A RetrievalRequest for ``user`` with the scope resolved and checked as an edge does (or the
    ``asked`` scope given); ``fields`` are the request's other fields (``k``, ``overrides`` ...)."""
    if asked is None:
        asked = question_scope_checked(user=user, profile=profile, collection_ids=collection_ids)
    return RetrievalRequest(question=question, asked=asked, **fields)
