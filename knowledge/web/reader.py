"""The document reader: a document's extracted text by page, slide, sheet, heading or operation, each
passage marked, the cited one highlighted, and a search within the document; its pages (the reader,
the cited passage for the chat's side panel, the stored original) open a cited source at its location.

The reader is pure functions over the document's chunks (in index order): sections are the runs of
chunks that share a source reference, shown a page of sections at a time so a 10,000-passage API spec
stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import FileResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET

from config.base.errors import NotFoundError
from config.base.validation import id_or_none, id_parse
from knowledge.access import document_for_reader
from knowledge.models import Chunk, DocumentSummary
from knowledge.retrieval.passages import source_fragment, source_place
from knowledge.services.documents import SERVED_CONTENT_TYPES
from knowledge.synthesis.quotes import quote_range_parse
from knowledge.web.grids import cited_grid, quoted_row, sheet_grids
from knowledge.web.pages import knowledge_page
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
    # A sheet's tables as grids (sheet_grids), shown instead of the parts' lines.
    grids: list[dict] = field(default_factory=list)


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
    # A table's chunks are drawn as grids; the section's other chunks as text.
    text_chunks = [c for c in group if not (c.metadata or {}).get("cells")]
    parts = section_parts(text_chunks, cited_id=cited_id, quote=quote if cited_id else None)
    return ReaderSection(
        place=source_place(first.source_ref) or "Text",
        anchor=source_fragment(first.page, first.source_ref).lstrip("#"),
        cited=cited_id is not None,
        ocr_confidence=(first.metadata or {}).get("ocr_confidence")
        if (first.metadata or {}).get("ocr")
        else None,
        parts=[_segments(p, search) for p in parts if p.before or p.quote or p.after],
        grids=sheet_grids(group, cited if cited_id else None, quote if cited_id else None),
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
    return {
        "chunk_id": part.chunk_id,
        "cited": part.cited,
        "segments": segments,
        "has_quote": any(kind == "quote" for _, kind in segments),
    }


@require_GET
@knowledge_page
def document_view(request, document_id: int):
    """A cited source at its location: the PDF's page with the quoted sentence and its passage
    highlighted on the page, or the cited section's text, highlighted."""
    document = document_for_reader(user=request.user, document_id=document_id)
    chunk = _cited_chunk(document, request.GET.get("chunk"))
    # A quote that is not a range of the passage is left out: the viewer then shows the passage.
    quote = quote_range_parse(request.GET.get("quote"), chunk.content) if chunk else None
    is_pdf = document.content_type == "application/pdf"
    search = request.GET.get("q", "").strip()[:200]
    reader = document_reader(
        _reader_chunks(document, chunk),
        cited=chunk,
        quote=quote,
        search=search,
        part=id_or_none(request.GET.get("part")),
    )
    return render(
        request,
        "knowledge/document_view.html",
        {
            "document": document,
            "chunk": chunk,
            "reader": reader,
            "search": search,
            "is_pdf": is_pdf,
            "pdf_viewer": _pdf_viewer_data(document, chunk, quote) if is_pdf else None,
            "summary": DocumentSummary.objects.filter(document=document).first(),
        },
    )


def _reader_chunks(document, cited: Chunk | None) -> list[Chunk]:
    """The document's passages in order: the cited passage's set, else the collection's active one."""
    if cited is not None:
        profile_id, model = cited.chunk_profile_id, cited.embedding_model
    else:
        profile_id, model = document.collection.chunk_profile_id, document.collection.embedding_model
    return list(
        Chunk.objects.filter(document=document, chunk_profile_id=profile_id, embedding_model=model)
        .only("pk", "index", "content", "source_ref", "page", "metadata")
        .order_by("index")
    )


@require_GET
@knowledge_page
def document_passage(request, document_id: int):
    """The cited passage as JSON for the chat's side panel: the section's text, each overlap once, the
    quoted sentence marked. Text only: the panel renders it as text."""
    document = document_for_reader(user=request.user, document_id=document_id)
    chunk = _cited_chunk(document, request.GET.get("chunk"))
    if chunk is None:
        raise NotFoundError("name the passage: ?chunk=ID")
    quote = quote_range_parse(request.GET.get("quote"), chunk.content)
    section = _section_chunks(document, chunk)
    parts = section_parts(section, cited_id=chunk.pk, quote=quote)
    return JsonResponse(
        {
            "title": document.display_title,
            "filename": document.filename,
            "place": source_place(chunk.source_ref),
            "origin_url": _web_link(document.origin_url),
            "parts": [
                {"cited": p.cited, "before": p.before, "quote": p.quote, "after": p.after}
                for p in parts
                if p.before or p.quote or p.after
            ],
            # A sheet's cited rows as a grid: the cited chunk's table around its rows (text only).
            "grid": cited_grid(section, chunk, quote),
        }
    )


def _web_link(url: str) -> str:
    """The original of a source's document (its page, its file at the synced commit), if it is a web
    address: a local repository's "path@commit:file" is shown as text by the citation, not linked."""
    return url if url.startswith(("https://", "http://")) else ""


def _section_chunks(document, chunk: Chunk) -> list[Chunk]:
    """The cited chunk's section: the chunks of its chunk set with its source reference, in order."""
    return list(
        Chunk.objects.filter(
            document=document,
            chunk_profile_id=chunk.chunk_profile_id,
            embedding_model=chunk.embedding_model,
            source_ref=chunk.source_ref,
        ).order_by("index")
    )


def _pdf_viewer_data(document, chunk: Chunk | None, quote: tuple[int, int] | None) -> dict:
    """What static/js/pdf_view.mjs needs: the bytes' address, the page, and the text to find on it.

    A table's passage reads "Header: value; ..." under its caption, which the page never prints: the
    text to find is its rows' cells as the page prints them, and the quote the cited row's."""
    passage, quoted = (chunk.content if chunk else ""), (chunk.content[quote[0] : quote[1]] if quote else "")
    cells = (chunk.metadata or {}).get("cells") if chunk else None
    if cells:
        passage = "\n".join(" ".join(row[1]) for row in cells)
        row = quoted_row(cells, quote) if quote else None
        quoted = " ".join(next(r[1] for r in cells if r[0] == row)) if row is not None else ""
    return {
        "file": reverse("knowledge:document_file", args=[document.pk]),
        "page": (chunk.page if chunk else None) or 1,
        "passage": passage,
        "quote": quoted,
        "assets": static("vendor/pdfjs/"),
    }


def _cited_chunk(document, raw: str | None) -> Chunk | None:
    if not raw:
        return None
    chunk = Chunk.objects.filter(document=document, pk=id_parse(raw, field="chunk")).first()
    if chunk is None:
        raise NotFoundError("no such passage in this document")
    return chunk


# A downloaded original is never rendered as a page of ours: even if a browser
# ignored the attachment disposition, it may run no script and load nothing.
DOWNLOAD_POLICY = "default-src 'none'; sandbox"


@require_GET
@knowledge_page
def document_file(request, document_id: int):
    """The stored original, always a sandboxed download; the PDF viewer's script reads the same bytes.

    The type is the one detected in the bytes at upload, never the client's; anything else a browser
    could render (HTML, SVG, XML, script, unknown) would run on our origin, so it is an attachment.
    PDFs too: the viewer draws them with pdf.js from these bytes, so no PDF is ever opened as a page
    of ours (a browser's own PDF viewer would run the file's scripts and links).
    """
    document = document_for_reader(user=request.user, document_id=document_id)
    etag = f'"{document.content_hash}"'
    if document.content_hash and etag in _if_none_match(request):
        # The same bytes the browser holds (the reader opened at another citation): asked again after
        # the access check above, so a revoked reader is refused, never served from a cache.
        response = HttpResponseNotModified()
    else:
        response = _original(document)
    response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = DOWNLOAD_POLICY
    return response


def _if_none_match(request) -> set[str]:
    return {tag.strip() for tag in request.headers.get("If-None-Match", "").split(",") if tag.strip()}


def _original(document) -> FileResponse:
    handle = document.file.open("rb")
    return FileResponse(
        handle,
        as_attachment=True,
        filename=document.filename,
        content_type="application/pdf" if _starts_as_pdf(handle) else _served_type(document),
    )


def _starts_as_pdf(handle) -> bool:
    """The same test as upload detection (a %PDF- header in the first KiB), on the stored bytes."""
    head = handle.read(1024)
    handle.seek(0)
    return b"%PDF-" in head


def _served_type(document) -> str:
    """Originals stored before types were detected may carry a client's type: serve those as bytes."""
    if document.content_type in SERVED_CONTENT_TYPES:
        return document.content_type
    return "application/octet-stream"
