"""The refusal: what an answer says when the documents do not cover the question.

Whether they do is decided once, by the answerability verdict
(knowledge.retrieval.answerability, applied in knowledge.synthesis.answer.answerable_only);
this module only words the refusal, the same for the chat pages, /query, the MCP
tools and the agentic loop. The nearest passages are listed as "closest
matches" with their document and place, never as [Source N] quotes, so
neither a reader nor a client parsing quotes takes them for an answer.

A refusal whose test knows the cause says it first (``refusal_reason_text``): the name the
documents never mention, the kind of value no passage states, or the language the collection's
embedding model does not read and how to change that.
"""

from __future__ import annotations

from knowledge.clients.embedding_registry import EMBEDDING_MODELS
from knowledge.retrieval.answer_type import KIND_WORDS
from knowledge.retrieval.answerability import (
    MAX_CLOSEST,
    REASON_ANSWER_TYPE,
    REASON_LANGUAGE,
    REASON_MISSING_TERM,
    Verdict,
)
from knowledge.retrieval.passages import source_fields, source_label
from knowledge.text.inline_markdown import block_marks_removed, inline_plain
from knowledge.text.language import LANGUAGE_NAMES

NO_RESULTS_TEXT = (
    "The knowledge base has nothing on this: no passage in the searched collections is relevant "
    "enough to your question, so there is no answer to give from them. Try rephrasing the "
    "question, or add documents that cover it."
)
CLOSEST_HEADING = "Closest matches (they do not answer the question):"
CLOSEST_CHARS = 160
MULTILINGUAL_MODELS = tuple(name for name, model in EMBEDDING_MODELS.items() if model.multilingual)
__all__ = [
    "CLOSEST_HEADING",
    "MAX_CLOSEST",
    "NO_RESULTS_TEXT",
    "closest_places",
    "refusal_reason_text",
    "refusal_text",
]
# What a closest match keeps beside the refusal's text, for its line to link to its place.
CLOSEST_FIELDS = ("chunk_id", "document_id", "document", "title", "source_ref", "label", "url")


def refusal_text(closest: list, verdict: Verdict | None = None) -> str:
    """The refusal (its cause first when the verdict knows it), followed by up to MAX_CLOSEST
    nearest passages (RetrievedChunks), if any."""
    opening = refusal_reason_text(verdict) or NO_RESULTS_TEXT
    lines = [_closest_line(item) for item in closest[:MAX_CLOSEST]]
    if not lines:
        return opening
    return opening + "\n\n" + CLOSEST_HEADING + "\n" + "\n".join(lines)


def closest_places(closest: list) -> list[dict]:
    """The refusal's closest matches (RetrievedChunks) as the places its lines name, in their order."""
    return [source_fields(item, CLOSEST_FIELDS) for item in closest[:MAX_CLOSEST]]


def refusal_reason_text(verdict: Verdict | None) -> str | None:
    """The refusal in words that name its cause, for the verdicts of the tests that know it."""
    if verdict is None or verdict.answerable:
        return None
    evidence = verdict.evidence
    if verdict.reason == REASON_MISSING_TERM:
        names = _listed(evidence.missing_terms)
        return (
            f"Your documents never mention {names}, so they cannot answer this. Check the spelling, "
            "or add documents that cover it."
        )
    if verdict.reason == REASON_ANSWER_TYPE:
        kind = KIND_WORDS.get(evidence.asked_kind, "the value asked for")
        return (
            f"The question asks for {kind}, and none of the passages that best match it states one, "
            "so there is no answer to give from your documents."
        )
    if verdict.reason == REASON_LANGUAGE:
        return _language_text(evidence.language)
    return None


def _language_text(language: str | None) -> str:
    name = LANGUAGE_NAMES.get(language or "", "another language")
    multilingual = f" (such as {MULTILINGUAL_MODELS[0]})" if MULTILINGUAL_MODELS else ""
    return (
        f"Your question seems to be in {name}, and the embedding model of the searched collections reads "
        "English only, so it cannot match your question to the documents. Ask in English, or have the "
        f"collection's owner choose a multilingual embedding model{multilingual} in the collection's "
        "settings (its documents are then embedded again)."
    )


def _listed(names) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


def _closest_line(item) -> str:
    chunk = item.chunk
    place = source_label(chunk.source_ref)
    return f"- {chunk.document.filename}, {place}: “{_excerpt(chunk.content)}”"


def _excerpt(text: str) -> str:
    """The passage's opening words, its Markdown marks read away (knowledge.text.inline_markdown):
    its lines are run together, so the marks that open them go first."""
    flat = inline_plain(" ".join(block_marks_removed(text).split()))
    if len(flat) <= CLOSEST_CHARS:
        return flat
    return flat[:CLOSEST_CHARS].rsplit(" ", 1)[0] + " …"
