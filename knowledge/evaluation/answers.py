"""Answer metrics for knowledge_eval --answers: citation hit rate and similarity to the gold answer.

Each question is answered through the same chat service users get (LLM when
configured, else extractive); the throw-away sessions are deleted afterwards.
"""

from __future__ import annotations

import re

import numpy as np

from knowledge.access import question_scope_checked
from knowledge.chat import chat_ask
from knowledge.clients.embedding import embed_texts
from knowledge.evaluation.questions import normalise
from knowledge.models import ChatSession
from knowledge.synthesis import events as ev


def score_answers(
    results, *, user, profile=None, collection_ids=None, overrides=None, on_answer=None
) -> None:
    """Fill ``cited``, ``answer_similarity`` and ``answer_run`` on each answerable question's result."""
    asked = question_scope_checked(user=user, profile=profile, collection_ids=collection_ids)
    session_ids = []
    try:
        for result in results:
            if not result.question.answerable:
                continue
            turn = chat_ask(
                user=user,
                question=result.question.question,
                asked=asked,
                overrides=overrides,
            )
            session_ids.append(turn.session_id)
            result.answer_run = answer_run(turn)
            if on_answer:
                on_answer(result)
            result.cited = [
                (normalise(c["document"]), normalise(c["source_ref"])) for c in turn.cited_sources
            ]
            result.first_quote = first_quote_source(turn.answer, turn.cited_sources)
            if result.question.answer:
                result.answer_similarity = answer_similarity(result.question.answer, turn.answer)
    finally:
        ChatSession.objects.filter(pk__in=session_ids).delete()


def answer_run(turn) -> dict:
    """How the answer was made: its latency, LLM calls and, for agentic answers, the loop's trace."""
    step = next((e["data"] for e in turn.events if e["event"] == ev.LLM_STEP), {})
    agent_steps = [e["data"] for e in turn.events if e["event"] == ev.AGENT_STEP]
    return {
        "mode": turn.mode,
        "latency_ms": turn.durations_ms.get("total"),
        "llm_calls": len(step.get("calls") or []),
        "agentic": step.get("agentic"),
        "steps": [s["step"] for s in agent_steps],
    }


def answer_similarity(gold: str, answer: str) -> float:
    """Cosine of the two texts' embeddings (the retrieval model, unit vectors)."""
    if not answer.strip():
        return 0.0
    gold_vector, answer_vector = embed_texts([gold, answer])
    return float(np.dot(gold_vector, answer_vector))


# An extracted answer's quote line: - "the sentence" [Source N]
_QUOTE_LINE = re.compile(r'^- ".*" \[Source (\d+)\]\s*$', re.MULTILINE)


def first_quote_source(answer: str, cited_sources: list[dict]) -> tuple[str, str] | None:
    """(document, source_ref) of the answer's first quoted sentence; None if it quotes nothing."""
    match = _QUOTE_LINE.search(answer or "")
    if not match:
        return None
    number = int(match.group(1))
    cited = next((c for c in cited_sources if c.get("n") == number), None)
    return (normalise(cited["document"]), normalise(cited["source_ref"])) if cited else None
