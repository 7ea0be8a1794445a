"""Chat sessions and their turns as saved: a turn opened under its session, the earlier turns a
follow-up reads, the answer put on the turn, the session's token totals, the turn saved with its events;
and rename and delete (finding one for its owner, and the scope a question searches, is
knowledge.access: ``chat_session_for_owner``, ``question_scope_checked``)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from config.base.errors import KnowledgeError
from knowledge.access import QuestionScope
from knowledge.chat.followup import PreviousTurn
from knowledge.chat.payloads import source_summary
from knowledge.clients.llm import TOKEN_SOURCE_ESTIMATE, TOKEN_SOURCE_USAGE
from knowledge.models import ChatSession, ChatTurn
from knowledge.synthesis.answer import Answer
from knowledge.synthesis.prompts import Exchange

MAX_TITLE_CHARS = ChatSession._meta.get_field("title").max_length
TITLE_CHARS = 80  # a new session's title: the question's first line's worth
HISTORY_TURNS = 6  # earlier turns a follow-up is resolved and answered with


def chat_turn_open(*, user, asked: QuestionScope, question: str) -> ChatTurn:
    """A new turn at the end of the asked session, or of a new one titled after the question.

    The session row is locked while the turn's index is counted, so two questions sent at once to one
    session get consecutive indexes.
    """
    session, profile = asked.session, asked.profile
    with transaction.atomic():
        if session is None:
            session = ChatSession.objects.create(
                user=user,
                profile=profile,
                collection_ids=[] if profile else list(asked.collection_ids),
                title=session_title(question),
            )
        session = ChatSession.objects.select_for_update().get(pk=session.pk)
        if not session.title:
            session.title = session_title(question)
            session.save(update_fields=["title"])
        index = session.turns.count()
        return ChatTurn.objects.create(session=session, index=index, question=question)


def session_title(question: str) -> str:
    flat = " ".join(question.split())
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1].rstrip() + "…"


def chat_turn_history(*, turn: ChatTurn) -> tuple[PreviousTurn | None, list[Exchange]]:
    """The last answered turns before ``turn`` in its session, oldest first, and the last one alone."""
    turns = list(
        ChatTurn.objects.filter(session_id=turn.session_id, index__lt=turn.index)
        .exclude(mode="")
        .order_by("-index")[:HISTORY_TURNS]
    )[::-1]
    if not turns:
        return None, []
    last = turns[-1]
    previous = PreviousTurn(last.question, last.answer, list(last.cited_sources))
    return previous, [Exchange(t.question, t.answer) for t in turns]


def chat_turn_answer_set(
    *, turn: ChatTurn, answer: Answer, resolved_question: str, calls: list[dict], errors: list[str]
) -> None:
    """Put the answer on the turn (not yet saved); its tokens are every LLM call's (rewrites, agent
    steps, answers).

    An extracted or no-results answer made no synthesis call: its own (estimated) tokens are added to
    the calls'. The turn's passages become the ones the answer's [Source N] number (an extracted
    answer adds the continuations it quotes): every page, the API and MCP list these beside it.
    """
    sources = {answer.token_source} | {c["token_source"] for c in calls}
    own = answer.mode != ChatTurn.Mode.LLM
    turn.resolved_question = resolved_question
    turn.answer = answer.text
    turn.mode = answer.mode
    turn.cited_sources = [c.as_dict() for c in answer.citations]
    turn.closest = answer.closest
    if answer.passages is not None:
        turn.retrieved = [source_summary(s) for s in answer.passages]
    turn.dropped_citations = answer.dropped
    turn.input_tokens = (answer.input_tokens if own else 0) + sum(c["input_tokens"] for c in calls)
    turn.output_tokens = (answer.output_tokens if own else 0) + sum(c["output_tokens"] for c in calls)
    turn.token_source = TOKEN_SOURCE_USAGE if sources == {TOKEN_SOURCE_USAGE} else TOKEN_SOURCE_ESTIMATE
    turn.llm_model = answer.model
    turn.error = "\n".join(errors)


def chat_session_tokens_add(*, session: ChatSession, turn: ChatTurn) -> ChatSession:
    """Add the turn's tokens to its session's totals (in SQL, so concurrent turns add up) and read them."""
    ChatSession.objects.filter(pk=session.pk).update(
        input_tokens=F("input_tokens") + turn.input_tokens,
        output_tokens=F("output_tokens") + turn.output_tokens,
        updated_at=timezone.now(),
    )
    session.refresh_from_db(fields=["input_tokens", "output_tokens", "updated_at"])
    return session


def chat_turn_save(*, turn: ChatTurn, events: list[dict], durations_ms: dict) -> None:
    """Save the turn with its stored events, so it can be replayed, and its step durations."""
    turn.events = events
    turn.durations_ms = durations_ms
    turn.save()


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
