"""The answers rated helpful, stored as an evaluation set through the JSON Lines loader.

Rating and listing answers are services (knowledge.services.feedback); storing them as an EvalSet
belongs with the other question-set loaders (knowledge.evaluation.store), a layer above the services.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from config.base.errors import KnowledgeError
from knowledge.evaluation.store import eval_set_import
from knowledge.models import ChatTurn, EvalSet
from knowledge.services.feedback import feedback_questions_write, rated_turns


def feedback_eval_set_import(*, name: str, turns=None, out: Path | None = None) -> tuple[EvalSet, int]:
    """Store the helpful answers (or ``turns``) as EvalSet ``name``, through the JSON Lines loader.

    Going through the file ``knowledge_eval_import --jsonl`` reads proves the export is in that
    format; ``out`` keeps the file. Nothing rated helpful is bad input: no set is replaced.
    """
    turns = list(rated_turns(rating=ChatTurn.Rating.UP) if turns is None else turns)
    if not turns:
        raise KnowledgeError("no answer has been rated helpful yet, so there is nothing to export")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(out) if out is not None else Path(folder) / "feedback.jsonl"
        feedback_questions_write(turns=turns, path=path)
        eval_set, errors = eval_set_import(name=name, path=path)
    if errors:
        raise KnowledgeError(f"line {errors[0][0]} of the export is invalid: {errors[0][1]}")
    return eval_set, len(turns)
