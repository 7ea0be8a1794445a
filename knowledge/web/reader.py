"""The document reader: a document's extracted text by page, slide, sheet, heading or operation, each
passage marked, the cited one highlighted, and a search within the document.

Pure functions over the document's chunks (in index order): sections are the runs of chunks that share
a source reference, shown a page of sections at a time so a 10,000-passage API spec stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from knowledge.retrieval.passages import source_fragment, source_place
from knowledge.web.passages import section_parts
from knowledge.web.snippets import mark_words, query_words

SECTIONS_PER_PAGE = 30


@dataclass
class ReaderSection:
    place: str  # "Page 3", "API operation GET /pets", a heading
    anchor: str  # the fragment a citation link ends with ("page=3", a heading's slug)
    cited: bool
    # Tesseract's mean word confidence (0-100) when the section's text was read by OCR, else None.
    ocr_confidence: float | None = None
    # Each passage as (text, kind) segments: kind "" plain, "quote" the quoted sentence, "match" a search hit.
    parts: list[dict] = field(default_factory=list)


@dataclass
class Reader:
    sections: list[ReaderSection]
    page: int
    pages: int
    total_sections: int
    matching_sections: int | None  # with a search: how many sections hold a searched word


def document_reader(
    chunks: list, *, cited=None, quote=None, search: str = "", part: int | None = None
) -> Reader:
    """The page of sections to show: the one holding the cited passage unless ``part`` names another;
    with ``search``, only the sections that hold a searched word, those words marked."""
    every_section = _sections(chunks)
    words = query_words(search)
    grouped = [group for group in every_section if _mentions(group, words)] if words else every_section
    pages = max(1, -(-len(grouped) // SECTIONS_PER_PAGE))
    page = part if part is not None else _cited_page(grouped, cited)
    page = min(max(page, 1), pages)
    shown = grouped[(page - 1) * SECTIONS_PER_PAGE : page * SECTIONS_PER_PAGE]
    return Reader(
        sections=[_section(group, cited, quote, search) for group in shown],
        page=page,
        pages=pages,
        total_sections=len(every_section),
        matching_sections=len(grouped) if words else None,
    )


def _sections(chunks: list) -> list[list]:
    """Runs of consecutive chunks with the same source reference."""
    groups: list[list] = []
    for chunk in chunks:
        if groups and groups[-1][0].source_ref == chunk.source_ref:
            groups[-1].append(chunk)
        else:
            groups.append([chunk])
    return groups


def _mentions(group: list, words: list[str]) -> bool:
    text = " ".join(chunk.content for chunk in group).lower()
    return any(word in text for word in words)


def _cited_page(groups: list[list], cited) -> int:
    if cited is None:
        return 1
    for index, group in enumerate(groups):
        if any(chunk.pk == cited.pk for chunk in group):
            return index // SECTIONS_PER_PAGE + 1
    return 1


def _section(group: list, cited, quote, search: str) -> ReaderSection:
    first = group[0]
    cited_id = cited.pk if cited is not None and any(c.pk == cited.pk for c in group) else None
    parts = section_parts(group, cited_id=cited_id, quote=quote if cited_id else None)
    return ReaderSection(
        place=source_place(first.source_ref) or "Text",
        anchor=source_fragment(first.page, first.source_ref).lstrip("#"),
        cited=cited_id is not None,
        ocr_confidence=(first.metadata or {}).get("ocr_confidence")
        if (first.metadata or {}).get("ocr")
        else None,
        parts=[_segments(p, search) for p in parts if p.before or p.quote or p.after],
    )


def _ocr_confidence(chunk) -> float | None:
    metadata = getattr(chunk, "metadata", None) or {}
    return metadata.get("ocr_confidence") if metadata.get("ocr") else None


def _segments(part, search: str) -> dict:
    if search:
        text = part.before + part.quote + part.after
        segments = [(piece, "match" if hit else "") for piece, hit in mark_words(text, search)]
    else:
        segments = [
            (text, kind)
            for text, kind in ((part.before, ""), (part.quote, "quote"), (part.after, ""))
            if text
        ]
    return {"chunk_id": part.chunk_id, "cited": part.cited, "segments": segments}
