"""The payloads of a chat's events and of a saved turn: the final answer, a retrieved source, one LLM
call, and a turn as one JSON object (``knowledge_ask --json``, API responses)."""

from __future__ import annotations

from dataclasses import dataclass, field

from knowledge.clients.llm import TOKEN_SOURCE_ESTIMATE
from knowledge.models import ChatTurn
from knowledge.retrieval.sources import source_fields, source_label, source_place
from knowledge.synthesis.citations import answer_html


@dataclass
class Answer:
    text: str
    mode: str
    citations: list = field(default_factory=list)
    dropped: int = 0
    label: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    token_source: str = TOKEN_SOURCE_ESTIMATE
    model: str = ""
    duration_ms: float = 0.0


def final_payload(answer: Answer) -> dict:
    return {
        "html": answer_html(answer.text, answer.citations),
        "text": answer.text,
        "mode": answer.mode,
        "label": answer.label,
        "sources": [
            {**c.as_dict(), "label": source_label(c.source_ref), "place": source_place(c.source_ref)}
            for c in answer.citations
        ],
        "dropped_citations": answer.dropped,
    }


# The chat's ``sources`` event: one entry per chunk in the context, in [Source N] order.
SOURCE_EVENT_FIELDS = (
    "n",
    "chunk_id",
    "document_id",
    "document",
    "title",
    "source_ref",
    "label",
    "page",
    "role",
    "url",
    "origin_url",
    "scores",
    "match",
)


def source_summary(retrieved) -> dict:
    return source_fields(retrieved, SOURCE_EVENT_FIELDS)


def call_summary(purpose: str, result) -> dict:
    return {
        "purpose": purpose,
        "model": result.model,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "token_source": result.token_source,
        "duration_ms": result.duration_ms,
    }


# A citation in a turn's summary; ``origin_url`` (the original of a source's document) is added with
# "" for the turns saved before citations carried it.
CITATION_SUMMARY_FIELDS = ("n", "document", "source_ref", "text", "title", "url", "document_id")


def turn_summary(turn: ChatTurn) -> dict:
    """A turn as one JSON object (knowledge_ask --json, API responses)."""
    return {
        "answer": turn.answer,
        "mode": turn.mode,
        "citations": [
            {k: c.get(k) for k in CITATION_SUMMARY_FIELDS} | {"origin_url": c.get("origin_url", "")}
            for c in turn.cited_sources
        ],
        "dropped_citations": turn.dropped_citations,
        "tokens": {"input": turn.input_tokens, "output": turn.output_tokens, "source": turn.token_source},
        "events": [e["event"] for e in turn.events],
        "session": turn.session_id,
        "turn": turn.index,
        "question": turn.question,
        "resolved_question": turn.resolved_question,
        "model": turn.llm_model,
        "error": turn.error,
        "durations_ms": turn.durations_ms,
        "feedback": {"rating": turn.feedback_rating, "comment": turn.feedback_comment},
    }
