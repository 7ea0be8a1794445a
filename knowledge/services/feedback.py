"""Answers rated by their askers: thumbs up or down with an optional comment, stored on the turn.

Rated answers are listed in the admin for review, and the helpful ones become
evaluation questions in the JSON Lines format ``knowledge_eval`` loads
(knowledge.evaluation.questions): the question as it was searched, the cited
(document, source_ref) pairs as the expected sources, and the answer. A helpful
"nothing on this" answer cited nothing, so it becomes a question the knowledge
base cannot answer (an empty ``expected_sources``), which is what it showed. Storing them as an
evaluation set is knowledge.evaluation.feedback, which sits above the services.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.db.models import QuerySet
from django.utils import timezone

from config.base.errors import KnowledgeError
from knowledge.models import ChatTurn

MAX_COMMENT_CHARS = 2000
FEEDBACK_KIND = "feedback"


def turn_feedback_set(*, turn: ChatTurn, rating: str, comment: str = "") -> ChatTurn:
    """Rate an answered turn ("up" or "down", with an optional comment); rating again replaces it."""
    if rating not in ChatTurn.Rating.values:
        raise KnowledgeError('rating must be "up" or "down"')
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise KnowledgeError(f"the comment is longer than {MAX_COMMENT_CHARS} characters")
    if not turn.mode:
        raise KnowledgeError("this question was not answered, so there is no answer to rate")
    turn.feedback_rating = rating
    turn.feedback_comment = comment
    turn.feedback_at = timezone.now()
    turn.save(update_fields=["feedback_rating", "feedback_comment", "feedback_at"])
    return turn


def rated_turns(*, rating: str | None = None) -> QuerySet[ChatTurn]:
    """Every rated turn (or those with ``rating``), newest rating first."""
    turns = ChatTurn.objects.exclude(feedback_rating="").select_related("session", "session__user")
    if rating is not None:
        turns = turns.filter(feedback_rating=rating)
    return turns.order_by("-feedback_at", "-pk")


def feedback_question(turn: ChatTurn) -> dict:
    """One rated turn as a question-set line (knowledge.evaluation.questions' format)."""
    expected = {(c.get("document"), c.get("source_ref")): None for c in turn.cited_sources}
    return {
        "id": f"feedback-{turn.session_id}-{turn.index}",
        "question": turn.resolved_question or turn.question,
        "expected_sources": [{"document": d, "source_ref": r} for d, r in expected if d and r],
        "answer": turn.answer,
        "kind": FEEDBACK_KIND,
    }


def feedback_questions_write(*, turns, path: Path) -> int:
    """Write ``turns`` as JSON Lines to ``path``; returns how many lines were written."""
    lines = [json.dumps(feedback_question(turn), ensure_ascii=False) for turn in turns]
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)
