"""Grading (docs/design.md#agents): does each retrieved passage help answer the question?

One LLM call scores every passage from 0 to 1; a passage passes at the
profile's confidence threshold. Without an LLM, or when the reply is
unusable, nothing is graded and every passage stays: the retrieval
threshold (minRelevanceScore) has already filtered them.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.clients.llm import LLMError
from knowledge.retrieval.rerank import count_instruction, parse_scores

PASSAGE_CHARS = 600
GRADE_PROMPT = (
    "For each numbered passage, give your confidence from 0.0 to 1.0 that it contains information "
    "needed to answer the question (1.0: it answers part of it directly; 0.0: unrelated). "
    'Reply with JSON only: {"scores": [score for passage 1, passage 2, ...]}'
)


@dataclass
class Grades:
    scores: list[float] | None  # None: not graded
    method: str  # llm | skipped
    threshold: float
    note: str = ""

    def passed(self, items: list) -> list:
        if self.scores is None:
            return list(items)
        return [item for item, score in zip(items, self.scores, strict=True) if score >= self.threshold]

    def as_detail(self, items: list) -> dict:
        passed = len(self.passed(items))
        return {
            "graded": len(items) if self.scores is not None else 0,
            "passed": passed,
            "threshold": self.threshold,
            "scores": self.scores,
        }


def grade(question: str, items: list, *, threshold: float, ask) -> Grades:
    """Grades for ``items`` (RetrievedChunks); ``ask`` is None without an LLM or with grading off."""
    if not items:
        return Grades([], "llm" if ask else "skipped", threshold)
    if ask is None:
        return Grades(None, "skipped", threshold, note="not graded")
    passages = "\n\n".join(
        f"[{n}] {item.chunk.content[:PASSAGE_CHARS]}" for n, item in enumerate(items, start=1)
    )
    messages = [
        {"role": "system", "content": GRADE_PROMPT},
        {
            "role": "user",
            "content": f"Question: {question}\n\n{count_instruction(len(items))}Passages:\n{passages}",
        },
    ]
    try:
        reply = ask("grade", messages, max_tokens=20 + 6 * len(items))
        scores = _unit_scores(parse_scores(reply.text, expected=len(items)))
    except (LLMError, ValueError) as exc:
        return Grades(None, "skipped", threshold, note=f"LLM grading unusable, nothing filtered: {exc}")
    for item, score in zip(items, scores, strict=True):
        item.scores["grade"] = score
    return Grades(scores, "llm", threshold)


def _unit_scores(scores: list[float]) -> list[float]:
    """Scores on 0-1; a model that answered on 0-10 (as for reranking) is rescaled."""
    if any(s < 0 for s in scores):
        raise ValueError("scores must not be negative")
    if max(scores, default=0) > 1:
        if max(scores) > 10:
            raise ValueError("scores must be between 0 and 1")
        scores = [s / 10 for s in scores]
    return [round(s, 4) for s in scores]
