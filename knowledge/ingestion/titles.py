"""A document's title (pure): from its metadata or first heading, else a cleaned file name.

Tried in order: the format's own metadata (PDF document info, DOCX/PPTX/XLSX
core properties, the HTML ``<title>``, OpenAPI ``info.title``), then the first
heading (Markdown ``#``, an HTML ``<h1>``, a Word "Title"/"Heading 1"
paragraph, the first slide's title, a PDF's first line when the page's largest
text agrees with it), then ``title_from_filename``. Values that are really
file names or tool defaults ("Binder1.pdf", "Microsoft Word - x.docx",
"untitled") are ignored. A failure to read metadata just moves on: extraction
reports damaged files, not this.
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import PurePath

from knowledge.ingestion.formats.pdf_content import pdf_page_content_size
from knowledge.ingestion.headers import title_from_filename

MAX_TITLE_CHARS = 300
_HTML_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_HTML_H1 = re.compile(rb"<h1[^>]*>(.*?)</h1\s*>", re.I | re.S)
_TAGS = re.compile(r"<[^>]+>")
_MD_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.M)
# OpenAPI info.title, read without parsing a possibly large document.
_OPENAPI_JSON_TITLE = re.compile(r'"info"\s*:\s*\{[^{}]*?"title"\s*:\s*"((?:[^"\\]|\\.)*)"', re.S)
_OPENAPI_YAML_TITLE = re.compile(r"^info:[ \t]*\n(?:[ \t]+.*\n)*?[ \t]+title:[ \t]*(.+?)[ \t]*$", re.M)
_FILE_LIKE = re.compile(r"\.(pdf|docx?|pptx?|xlsx?|txt|html?|md|indd|tex|dvi|ps)$", re.I)
_TOOL_PREFIX = re.compile(r"^(microsoft (word|powerpoint|excel) - )", re.I)
_PLACEHOLDERS = {"untitled", "title", "document", "presentation", "slide 1", "none", "unknown", "binder1"}
_EXTENSIONS_HTML = {".html", ".htm", ".xhtml"}
_EXTENSIONS_MD = {".md", ".markdown"}


def document_title(filename: str, data: bytes) -> str:
    """The best title for the uploaded bytes, never empty."""
    for candidate in _candidates(filename, data):
        cleaned = title_clean(candidate)
        if cleaned:
            return cleaned
    return title_from_filename(filename) or filename


def title_clean(raw: str | None) -> str:
    """Whitespace collapsed; '' for tool defaults and values that are file names."""
    text = _TOOL_PREFIX.sub("", " ".join((raw or "").split())).strip(" -–|")
    if not text or len(text) < 2 or text.lower() in _PLACEHOLDERS or _FILE_LIKE.search(text):
        return ""
    return text[:MAX_TITLE_CHARS]


def _candidates(filename: str, data: bytes):
    ext = PurePath(filename).suffix.lower()
    if b"%PDF-" in data[:1024]:
        yield from _guarded(_pdf_titles, data)
    elif data.startswith(b"PK\x03\x04"):
        yield from _guarded(_office_titles, data)
    elif ext in _EXTENSIONS_HTML or data.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        yield from html_titles(data)
    elif ext in (".json", ".yaml", ".yml"):
        text = data[:65536].decode("utf-8", "replace")
        match = _OPENAPI_JSON_TITLE.search(text)
        if match:
            yield _json_string(match.group(1))
        match = _OPENAPI_YAML_TITLE.search(text)
        if match:
            yield match.group(1).strip("'\"")
    elif ext in _EXTENSIONS_MD:
        match = _MD_HEADING.search(data[:65536].decode("utf-8", "replace"))
        if match:
            yield match.group(1)


def _json_string(escaped: str) -> str:
    try:
        return json.loads(f'"{escaped}"')
    except ValueError:
        return ""


def _guarded(reader, data: bytes):
    try:
        yield from list(reader(data))
    except Exception:  # damaged files are reported by extraction; the title falls back to the name
        return


def html_titles(data: bytes):
    """The HTML ``<title>``, then the first ``<h1>`` (a small scan: no full parse for a title)."""
    head = data[:262144]
    for pattern in (_HTML_TITLE, _HTML_H1):
        match = pattern.search(head)
        if match:
            text = match.group(1).decode("utf-8", "replace")
            yield html.unescape(_TAGS.sub(" ", text))


def _pdf_titles(data: bytes):
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        return
    metadata = reader.metadata
    if metadata is not None and metadata.title:
        yield str(metadata.title)
    if not len(reader.pages):
        return
    first = reader.pages[0]
    if pdf_page_content_size(first, limit=_TITLE_PAGE_CONTENT) <= _TITLE_PAGE_CONTENT:
        yield _pdf_first_line_title(first)


# A first page with more drawing instructions than this is not read for a title: it runs before
# the extraction's content limits, and a title page that heavy is a hostile one (7 s for 5 MB in pypdf).
_TITLE_PAGE_CONTENT = 1024 * 1024


def _pdf_first_line_title(page) -> str:
    """The page's first line, when the page's largest text agrees with it (or continues it).

    A first line alone is often a running header or a page number; the largest text alone is
    often split by kerning ("Pa per S e a rch"). Comparing them without spaces keeps the one
    that reads well.
    """
    runs: list[tuple[float, str]] = []

    def visit(text, cm, tm, font, size):
        if text.strip() and len(runs) < 80:
            runs.append((abs((size or 0) * (tm[3] or 1) * (cm[3] or 1)), text))

    first_line = next(
        (line for line in (page.extract_text(visitor_text=visit) or "").splitlines() if line.strip()), ""
    )
    if not runs or not first_line:
        return ""
    top = max(size for size, _ in runs)
    largest = " ".join(" ".join(text for size, text in runs if size >= top - 0.5).split())
    line, big = _squeezed(first_line), _squeezed(largest)
    if not line or not big:
        return ""
    if big in line:
        return first_line
    if big.startswith(line) and len(largest.split()) <= 25:
        return largest
    return ""


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def _office_titles(data: bytes):
    import zipfile

    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    if any(name.startswith("word/") for name in names):
        import docx

        document = docx.Document(io.BytesIO(data))
        yield document.core_properties.title or ""
        for paragraph in document.paragraphs[:200]:
            style = (paragraph.style.name if paragraph.style is not None else "").lower()
            if style in ("title", "heading 1") and paragraph.text.strip():
                yield paragraph.text
                return
    elif any(name.startswith("ppt/") for name in names):
        import pptx

        presentation = pptx.Presentation(io.BytesIO(data))
        yield presentation.core_properties.title or ""
        if len(presentation.slides):
            title = presentation.slides[0].shapes.title
            yield title.text_frame.text if title is not None else ""
    elif any(name.startswith("xl/") for name in names):
        import openpyxl

        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
        yield workbook.properties.title or ""
