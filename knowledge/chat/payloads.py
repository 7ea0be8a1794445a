"""The payloads of a chat's events and of a saved turn: the start, the retrieval, the LLM step, the
tokens, the final answer and the completion; a retrieved source, and a turn as one JSON
object (``knowledge_ask --json``, API responses). Each is built from values given to it, in the order
knowledge.chat.stream emits them."""

from __future__ import annotations

from knowledge.access import QuestionScope
from knowledge.models import ChatSession, ChatTurn, Profile
from knowledge.retrieval.passages import source_fields, source_label, source_place
from knowledge.retrieval.service import KnowledgeContext
from knowledge.synthesis.answer import Answer
from knowledge.synthesis.citations import answer_html, cited_urls


def start_payload(*, session: ChatSession, turn: ChatTurn, question: str, profile: Profile | None) -> dict:
    return {
        "session_id": session.pk,
        "session_title": session.title,
        "turn_index": turn.index,
        "question": question,
        "profile_id": profile.pk if profile else None,
        "profile_type": profile.profile_type if profile else Profile.ProfileType.RAG_FOCUSED,
        "profile_tag": profile.tag if profile else "",
    }


def retrieval_start_payload(*, asked: QuestionScope, question: str, resolved: str, method: str) -> dict:
    profile = asked.profile
    return {
        "collection_count": profile.profile_collections.count() if profile else len(asked.collection_ids),
        "question": question,
        "resolved_question": resolved,
        "resolution": method,
    }


def retrieval_payload(*, context: KnowledgeContext, duration_ms: float | None) -> dict:
    """The ``retrieval_complete`` event; its ``sources`` are what the turn keeps as its passages until
    an answer numbers its own (``Answer.passages``)."""
    sources = [source_summary(s) for s in context.sources]
    documents = {s["document_id"]: {"id": s["document_id"], "title": s["title"]} for s in sources}
    return {
        "results_count": len(context.primary_chunks),
        "answerable": context.answerability.as_dict() if context.answerability else None,
        "documents": list(documents.values()),
        "sources": sources,
        "context_tokens": context.total_tokens,
        "duration_ms": duration_ms,
        "timings_ms": context.timings_ms,
    }


def llm_step_payload(
    *, answer: Answer, turn: ChatTurn, duration_ms: float | None, calls: list[dict], trace: dict | None
) -> dict:
    return {
        "step": "synthesis",
        "mode": answer.mode,
        "model": answer.model or None,
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "token_source": turn.token_source,
        "duration_ms": duration_ms,
        "calls": calls,
        "error": turn.error,
        "agentic": trace,
    }


def tokens_payload(*, turn: ChatTurn, session: ChatSession) -> dict:
    """The turn's tokens and the session's totals (read after the turn was added to them)."""
    return {
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "source": turn.token_source,
        "total_input": session.input_tokens,
        "total_output": session.output_tokens,
    }


def complete_payload(*, turn: ChatTurn, duration_ms: float) -> dict:
    return {
        "duration_ms": duration_ms,
        "tokens": {"input": turn.input_tokens, "output": turn.output_tokens, "source": turn.token_source},
        "session_id": turn.session_id,
        "turn_id": turn.pk,
        "mode": turn.mode,
    }


def final_payload(answer: Answer, *, passages: list[dict]) -> dict:
    """The answer; ``passages`` (source summaries) is the list its [Source N] number, to show beside it."""
    cited = [c.as_dict() for c in answer.citations]
    urls = cited_urls(answer.text, cited)
    return {
        "html": answer_html(answer.text, answer.citations, answer.closest),
        "text": answer.text,
        "mode": answer.mode,
        "label": answer.label,
        "sources": [
            {
                **row,
                "url": urls.get(row["n"], row["url"]),
                "label": source_label(c.source_ref),
                "place": source_place(c.source_ref),
            }
            for c, row in zip(answer.citations, cited, strict=True)
        ],
        "dropped_citations": answer.dropped,
        "closest": answer.closest,
        "passages": passages,
    }


# A passage as listed beside an answer (the retrieval event's ``sources``, a turn's ``retrieved``):
# one entry per chunk in the context, in [Source N] order.
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


# A citation in a turn's summary; ``origin_url`` (the original of a source's document) is added with
# "" for the turns saved before citations carried it.
CITATION_SUMMARY_FIELDS = ("n", "document", "source_ref", "text", "title", "url", "document_id")


def turn_summary(turn: ChatTurn) -> dict:
    """A turn as one JSON object (knowledge_ask --json, API responses)."""
    urls = cited_urls(turn.answer, turn.cited_sources)
    return {
        "answer": turn.answer,
        "mode": turn.mode,
        "citations": [
            {k: c.get(k) for k in CITATION_SUMMARY_FIELDS}
            | {"url": urls.get(c.get("n"), c.get("url")), "origin_url": c.get("origin_url", "")}
            for c in turn.cited_sources
        ],
        "dropped_citations": turn.dropped_citations,
        "closest": turn.closest,
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
