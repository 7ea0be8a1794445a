"""The refusal: what an answer says when the documents do not cover the question.

Whether they do is decided once, by the answerability verdict
(knowledge.retrieval.answerability, applied in knowledge.chat.stream.answerable_only);
this module only words the refusal, the same for the chat pages, /query, the MCP
tools and the agentic loop. The nearest passages are listed as "closest
matches" with their document and place, never as [Source N] quotes, so
neither a reader nor a client parsing quotes takes them for an answer.
"""

from __future__ import annotations

from knowledge.retrieval.sources import source_label

NO_RESULTS_TEXT = (
    "The knowledge base has nothing on this: no passage in the searched collections is relevant "
    "enough to your question, so there is no answer to give from them. Try rephrasing the "
    "question, or add documents that cover it."
)
CLOSEST_HEADING = "Closest matches (they do not answer the question):"
MAX_CLOSEST = 3
CLOSEST_CHARS = 160


def refusal_text(closest: list) -> str:
    """The refusal, followed by up to MAX_CLOSEST nearest passages (RetrievedChunks), if any."""
    lines = [_closest_line(item) for item in closest[:MAX_CLOSEST]]
    if not lines:
        return NO_RESULTS_TEXT
    return NO_RESULTS_TEXT + "\n\n" + CLOSEST_HEADING + "\n" + "\n".join(lines)


def _closest_line(item) -> str:
    chunk = item.chunk
    place = source_label(chunk.source_ref)
    return f"- {chunk.document.filename}, {place}: “{_excerpt(chunk.content)}”"


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= CLOSEST_CHARS:
        return flat
    return flat[:CLOSEST_CHARS].rsplit(" ", 1)[0] + " …"
