"""Question sets in JSON Lines (one object per line), validated line by line.

    {"id": "q1", "question": "...", "expected_sources": [{"document": "pasa.pdf",
     "source_ref": "page=3"}], "answer": "optional", "kind": "optional"}

An empty expected_sources list marks a question the knowledge base cannot
answer. Invalid lines are reported with their number and skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from config.base.validation import unstorable_location


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    expected: tuple[tuple[str, str], ...]  # normalised (document, source_ref) pairs
    answer: str = ""
    kind: str = ""

    @property
    def answerable(self) -> bool:
        return bool(self.expected)


@dataclass
class LoadResult:
    questions: list[EvalQuestion] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)


def normalise(text: str) -> str:
    """Strict matching, forgiving only whitespace and case (docs/design.md#evaluation)."""
    return re.sub(r"\s+", " ", str(text)).strip().lower()


def load_questions(path: Path) -> LoadResult:
    result = LoadResult()
    seen: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                question = parse_question(line)
                if question.id in seen:
                    raise ValueError(f"duplicate id {question.id!r}")
            except ValueError as exc:
                result.errors.append((number, str(exc)))
                continue
            seen.add(question.id)
            result.questions.append(question)
    return result


def parse_question(line: str) -> EvalQuestion:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, dict):
        raise ValueError("each line must be a JSON object")
    unstorable = unstorable_location(data, name="the line")
    if unstorable:  # the question and its sources are stored in text and jsonb columns
        raise ValueError(" ".join(unstorable))
    text = data.get("question")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('"question" must be a non-empty string')
    return EvalQuestion(
        id=str(data.get("id") or text[:40]),
        question=text.strip(),
        expected=_expected(data.get("expected_sources")),
        answer=str(data.get("answer") or ""),
        kind=str(data.get("kind") or ""),
    )


def _expected(raw) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list):
        raise ValueError('"expected_sources" must be a list (empty for a question with no answer)')
    pairs = []
    for item in raw:
        if not isinstance(item, dict) or not item.get("document") or not item.get("source_ref"):
            raise ValueError('each expected source needs "document" and "source_ref"')
        pairs.append((normalise(item["document"]), normalise(item["source_ref"])))
    return tuple(dict.fromkeys(pairs))
