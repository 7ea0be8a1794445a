"""A retrieved chunk as the public sees it: the one place its fields are read, its link and its label.

Every public shape of a retrieved chunk (the API's results, the chat's ``sources`` event, a
citation stored on a turn, the commands' JSON) is a tuple of field names picked from
``SOURCE_FIELDS`` by ``source_fields``, so a field means the same thing and is computed the same
way wherever it appears. The names are the API's and the events' (other tools read them), which
is why two names can hold one value: ``n`` and ``source_number``, ``text`` and ``content``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import quote

from django.utils.text import slugify

_COMPONENT_KINDS = {
    "schemas": "schema",
    "parameters": "parameter",
    "responses": "response",
    "requestBodies": "request body",
    "securitySchemes": "security scheme",
    "headers": "header",
    "examples": "example",
}


def place_url(*, document_id: int, chunk_id: int, page: int | None, source_ref: str | None) -> str:
    """Where a cited chunk lives: the document viewer, scrolled to the chunk's location.

    PDF  #page=N (the PDF open-parameter form), PPTX #slide=N, XLSX/CSV
    #sheet=NAME, DOCX/HTML/Markdown #<heading anchor>, TXT #section=NAME,
    OpenAPI #operation=METHOD /path or #component=TYPE/NAME.
    """
    return f"/documents/{document_id}/view/?chunk={chunk_id}{source_fragment(page, source_ref)}"


def source_url(chunk) -> str:
    """``place_url`` of a Chunk."""
    return place_url(
        document_id=chunk.document_id, chunk_id=chunk.pk, page=chunk.page, source_ref=chunk.source_ref
    )


def source_fragment(page: int | None, source_ref: str | None) -> str:
    kind, _, value = (source_ref or "").partition("=")
    if page or kind == "page":
        return f"#page={page or value}"
    if kind == "heading":
        anchor = slugify(value, allow_unicode=True)
        return f"#{quote(anchor)}" if anchor else ""
    if kind in {"slide", "sheet", "section", "operation", "component"}:
        return f"#{kind}={quote(value, safe='/{}')}"
    return ""


def source_label(source_ref: str | None) -> str:
    """A short human label for a strict source reference; unknown kinds are shown as they are.

    ``page=3`` -> "p. 3", ``operation=POST /pets`` -> "POST /pets". The stored ``source_ref``
    stays strict (docs/design.md#references, for evaluation and the API); this is how pages show it.
    """
    kind, separator, value = (source_ref or "").partition("=")
    value = " ".join(value.split())
    if not separator or not value:
        return source_ref or ""
    if kind == "page":
        return f"p. {value}"
    if kind in ("slide", "sheet"):
        return f"{kind} {value}"
    if kind in ("heading", "section", "operation"):
        return value
    if kind == "component":
        group, _, name = value.partition("/")
        return f"{_COMPONENT_KINDS.get(group, group)} {name}".strip() if name else value
    return source_ref


def source_place(source_ref: str | None) -> str:
    """Where a passage is, as a heading says it: "Page 8", "Slide 3", "API operation POST /pets"."""
    kind, separator, value = (source_ref or "").partition("=")
    value = " ".join(value.split())
    if not separator or not value:
        return source_ref or ""
    if kind in ("page", "slide", "sheet", "section"):
        return f"{kind.capitalize()} {value}"
    if kind == "heading":
        return value
    if kind == "operation":
        return f"API operation {value}"
    if kind == "component":
        label = source_label(source_ref)
        return label[:1].upper() + label[1:]
    return source_ref


# How alike a passage and the question are, in words (cosine similarity of all-MiniLM-L6-v2, the
# default model): on the development sets a passage that answers sits at 0.5 or above, one on the
# topic at 0.3-0.5, and below 0.3 it shares little more than words.
MATCH_WORDS = ((0.5, "strong match"), (0.3, "partial match"))
WEAK_MATCH = "weak match"
REFERENCE_MATCH = "referenced by a result"
CONTINUATION_MATCH = "read on from [{n}]"


def match_words(scores: dict | None, role: str | None = None) -> str:
    """A retrieved passage's relevance as users read it; the numbers stay on demand."""
    similarity = (scores or {}).get("similarity")
    if role == "continuation":  # knowledge.retrieval.continuation: the page read on
        return CONTINUATION_MATCH.format(n=(scores or {}).get("continues"))
    if similarity is None:
        return REFERENCE_MATCH if role == "reference" else ""
    return next((words for floor, words in MATCH_WORDS if similarity >= floor), WEAK_MATCH)


# Each public field of a retrieved chunk (a RetrievedChunk: ``chunk``, ``scores``, ``role``,
# ``source_number``), read lazily so a shape pays only for the fields it names (``url`` slugifies).
SOURCE_FIELDS: dict[str, Callable] = {
    "n": lambda r: r.source_number,
    "source_number": lambda r: r.source_number,
    "chunk_id": lambda r: r.chunk.pk,
    "document_id": lambda r: r.chunk.document_id,
    "document": lambda r: r.chunk.document.filename,
    "title": lambda r: r.chunk.document.display_title,
    "collection_id": lambda r: r.chunk.collection_id,
    "source_ref": lambda r: r.chunk.source_ref,
    "label": lambda r: source_label(r.chunk.source_ref),
    "page": lambda r: r.chunk.page,
    "url": lambda r: source_url(r.chunk),
    "origin_url": lambda r: r.chunk.document.origin_url,
    "content": lambda r: r.chunk.content,
    "text": lambda r: r.chunk.content,
    "role": lambda r: r.role,
    "scores": lambda r: r.scores,
    "match": lambda r: match_words(r.scores, r.role),
}

# The API's /retrieve/ results and references, and MCP search_knowledge's.
RETRIEVED_FIELDS = (
    "chunk_id",
    "document_id",
    "document",
    "title",
    "collection_id",
    "source_ref",
    "page",
    "content",
    "role",
    "source_number",
    "scores",
)


def source_fields(retrieved, names: Iterable[str]) -> dict:
    """The fields ``names`` of a retrieved chunk, in that order."""
    return {name: SOURCE_FIELDS[name](retrieved) for name in names}
