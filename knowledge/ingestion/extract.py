"""Bytes in, sections out: turn an uploaded file into citable text sections.

Every supported format is read with its usual library (pypdf, python-docx,
python-pptx, openpyxl, csv, BeautifulSoup, PyYAML) and cut into
:class:`~knowledge.ingestion.types.Section` objects that each carry one strict
``source_ref`` (``page=3``, ``slide=2``, ``sheet=Sales``, ``heading=Intro``,
``section=TITLE``; OpenAPI documents are handed to
``knowledge.ingestion.openapi``). Section text is normalised the same way for
every format: whitespace inside a line is collapsed and paragraphs are
separated by one blank line, so the chunker only has to split on ``"\\n\\n"``.

Everything here is pure (no Django, no database). Any problem a user can fix
(wrong type, empty, encrypted, corrupt) raises :class:`ExtractionError` whose
message is shown to the user as-is.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import PurePath

from knowledge.ingestion.limits import (
    DEFAULT_LIMITS,
    IngestLimits,
    TextBudget,
    html_elements_check,
    json_loads_bounded,
    pdf_pages_check,
    text_size_check,
    yaml_load_bounded,
    zip_members_checked,
)
from knowledge.ingestion.types import ExtractionError, Section

FORMATS = ("pdf", "docx", "pptx", "xlsx", "csv", "html", "markdown", "text", "openapi")

SUPPORTED_DESCRIPTION = (
    "PDF (.pdf), Word (.docx), PowerPoint (.pptx), Excel (.xlsx), CSV (.csv, .tsv), "
    "HTML (.html, .htm), Markdown (.md, .markdown), plain text (.txt, .rst) and "
    "OpenAPI 3.x / Swagger 2 (.json, .yaml, .yml)"
)

# Rows of a table or sheet per paragraph: small enough that the paragraph
# chunker can split a big sheet, large enough to keep related rows together.
ROWS_PER_PARAGRAPH = 20

# Characters of a CSV given to csv.Sniffer (see _sniff_sample).
CSV_SNIFF_CHARS = 4096

# A DOCX paragraph styled as a heading but longer than this is body text that
# was styled by mistake; using it as a heading would lose its text.
MAX_HEADING_CHARS = 200

_EXTENSION_FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".csv": "csv",
    ".tsv": "csv",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    "": "text",
    ".json": "openapi",
    ".yaml": "openapi",
    ".yml": "openapi",
}
_ZIP_MARKERS = (("word/", "docx"), ("ppt/", "pptx"), ("xl/", "xlsx"))
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def detect_format(filename: str, data: bytes, *, limits: IngestLimits = DEFAULT_LIMITS) -> str:
    """Name the format of ``data``, trusting content over the extension.

    Content wins where it is unambiguous (``%PDF`` magic, the part names
    inside an Office zip, an HTML doctype in a ``.txt``) because uploads are
    often misnamed; the extension decides between the text formats and tells
    which extractor should report a damaged binary file. JSON/YAML files are
    parsed here so a non-OpenAPI or malformed one is rejected before any work,
    and an Office zip whose directory announces a zip bomb is refused before
    any of its parts is read (``limits``).
    """
    if not _strip_bom(data).strip(b" \t\r\n\f\v\x00"):
        raise ExtractionError("the file is empty")
    ext = PurePath(filename).suffix.lower()
    hinted = _EXTENSION_FORMATS.get(ext)

    if b"%PDF-" in data[:1024]:
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        return _detect_zip(filename, data, hinted, limits)
    if data.startswith(_OLE_MAGIC):
        raise ExtractionError(
            f"unsupported file type: {filename} is a legacy Office file (.doc/.xls/.ppt); "
            f"save it as .docx/.xlsx/.pptx. Supported: {SUPPORTED_DESCRIPTION}"
        )
    if hinted in ("pdf", "docx", "pptx", "xlsx"):
        return hinted  # damaged or misnamed: the extractor says what is wrong
    if _looks_binary(data) or hinted is None:
        raise ExtractionError(
            f"unsupported file type {ext or '(no extension)'} ({filename}); "
            f"supported: {SUPPORTED_DESCRIPTION}"
        )
    if hinted == "openapi":
        _check_openapi(filename, ext, data, limits)
        return "openapi"
    if hinted in ("text", "markdown") and _looks_like_html(data):
        return "html"
    return hinted


def extract_sections(filename: str, data: bytes, *, limits: IngestLimits = DEFAULT_LIMITS) -> list[Section]:
    """Extract the non-empty sections of a document, in document order.

    Raises :class:`ExtractionError` for unsupported, empty, encrypted or
    corrupt files, and when the file holds no text at all (a scanned PDF
    without a text layer, a deck of pictures...), because indexing it would
    silently produce nothing to cite. Raises its subclass ``LimitExceeded`` as
    soon as the document breaks one of ``limits`` (text, sections, pages...).
    """
    fmt = detect_format(filename, data, limits=limits)
    budget = TextBudget(limits)
    try:
        sections = _extract_format(fmt, filename, data, budget)
    except RecursionError:
        # Markup nested thousands of levels deep (HTML, XML parts) outruns the recursive walkers.
        raise ExtractionError(f"{filename} is nested too deeply to be read") from None
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        hint = " (it may be a scanned PDF without a text layer)" if fmt == "pdf" else ""
        raise ExtractionError(f"no text could be extracted from {filename}{hint}")
    return sections


def _extract_format(fmt: str, filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    if fmt != "openapi":
        return _EXTRACTORS[fmt](filename, data, budget)
    from knowledge.ingestion.openapi import extract_openapi

    sections = list(extract_openapi(filename, data, limits=budget.limits))
    budget.add_section(len(sections))
    for section in sections:
        budget.charge(section.text)
    return sections


# --------------------------------------------------------------------------
# Format detection helpers
# --------------------------------------------------------------------------


def _detect_zip(filename: str, data: bytes, hinted: str | None, limits: IngestLimits) -> str:
    """Tell DOCX/PPTX/XLSX apart by the part folders inside the zip (after the zip-bomb checks)."""
    try:
        names = zip_members_checked(data, limits)
    except (zipfile.BadZipFile, ValueError, OSError):
        if hinted in ("docx", "pptx", "xlsx"):
            return hinted  # the extractor reports the damaged container
        names = []
    for prefix, fmt in _ZIP_MARKERS:
        if any(name.startswith(prefix) for name in names):
            return fmt
    raise ExtractionError(
        f"unsupported file type: {filename} is a zip archive that is not a DOCX, PPTX "
        f"or XLSX document; supported: {SUPPORTED_DESCRIPTION}"
    )


def _looks_binary(data: bytes) -> bool:
    """NUL bytes never occur in UTF-8/Latin-1 text, only in binary (or UTF-16)."""
    return not data.startswith(_UTF16_BOMS) and b"\x00" in data[:8192]


def _looks_like_html(data: bytes) -> bool:
    """Saved web pages are often uploaded as .txt; read them as HTML."""
    head = _strip_bom(data)[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _check_openapi(filename: str, ext: str, data: bytes, limits: IngestLimits) -> None:
    """Parse JSON/YAML within the nesting and alias limits; require ``openapi: 3.x`` or ``swagger: 2.0``."""
    kind = "JSON" if ext == ".json" else "YAML"
    text = _decode_text(data)
    if kind == "JSON":
        try:
            document = json_loads_bounded(text, limits)
        except json.JSONDecodeError as exc:
            raise ExtractionError(
                f"{filename} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from exc
    else:
        import yaml

        try:
            document = yaml_load_bounded(text, limits)
        except yaml.YAMLError as exc:
            raise ExtractionError(f"{filename} is not valid YAML: {_yaml_error(exc)}") from exc
    if not _is_openapi(document):
        raise ExtractionError(f"{filename} is {kind} but not an OpenAPI 3.x or Swagger 2 document")


def _is_openapi(document: object) -> bool:
    """YAML may load ``openapi: 3.0`` as a float, so compare the text form."""
    if not isinstance(document, dict):
        return False
    openapi, swagger = document.get("openapi"), document.get("swagger")
    return (openapi is not None and str(openapi).startswith("3.")) or (
        swagger is not None and str(swagger) == "2.0"
    )


def _yaml_error(exc: Exception) -> str:
    """PyYAML marks are 0-based; users count lines from 1."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return problem
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"


# --------------------------------------------------------------------------
# Text helpers shared by all formats
# --------------------------------------------------------------------------


def _strip_bom(data: bytes) -> bytes:
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def _decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM) first; Latin-1 never fails, so it is the fallback."""
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _collapse(text: str) -> str:
    """One line: runs of any whitespace (tabs, NBSP, ideographic space) become one space."""
    return " ".join(text.split())


def _clean_text(text: str) -> str:
    """Normalise a block of text: collapsed lines, one blank line between paragraphs.

    Control characters are dropped too (PostgreSQL text cannot hold NUL).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n")
    text = _CONTROL_CHARS.sub("", text.replace("\f", "\n\n"))
    paragraphs: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        line = _collapse(line)
        if line:
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    return "\n\n".join(paragraphs)


def _stem(filename: str) -> str:
    return _collapse(PurePath(filename).stem) or filename


def _cell_text(value: object) -> str:
    """Spreadsheet values as a person would read them (12000, not 12000.0)."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _collapse(str(value))


def _render_rows(
    rows: Iterable[Sequence[object]],
    *,
    header_needs_two_cells: bool = False,
    budget: TextBudget | None = None,
) -> str:
    """Render table rows as self-describing lines ``Header1: v1; Header2: v2``.

    The first non-empty row is the header, so every chunk of a big table still
    says what each value means. Empty cells and rows are skipped; a blank line
    every ``ROWS_PER_PARAGRAPH`` rows lets the paragraph chunker split. With
    ``header_needs_two_cells`` (document tables) a first row with a single
    filled cell is a caption, not a header, and the rows are rendered plainly.
    Sheets pass their ``budget``: rows are charged as they stream in, so a
    huge sheet stops at the text limit instead of being rendered whole.
    """
    header: list[str] | None = None
    lines: list[str] = []
    for row in rows:
        cells = [_cell_text(cell) for cell in row]
        if not any(cells):
            continue
        if header is None:
            header = cells
            if header_needs_two_cells and sum(1 for c in cells if c) < 2:
                header = []
                lines.append("; ".join(c for c in cells if c))
            continue
        lines.append(_render_row(header, cells))
        if budget is not None:
            budget.charge(lines[-1])
    if header and not lines:
        lines.append("; ".join(c for c in header if c))  # a table that is only a header
    blocks = [lines[i : i + ROWS_PER_PARAGRAPH] for i in range(0, len(lines), ROWS_PER_PARAGRAPH)]
    return "\n\n".join("\n".join(block) for block in blocks)


def _render_row(header: Sequence[str], cells: Sequence[str]) -> str:
    parts = []
    for index, value in enumerate(cells):
        if not value:
            continue
        name = header[index] if index < len(header) else ""
        parts.append(f"{name}: {value}" if name else value)
    return "; ".join(parts)


class _HeadingSections:
    """Collect paragraphs under a stack of headings and emit one Section per heading.

    Shared by DOCX, HTML, Markdown and text: they differ only in how they find
    headings. Text before the first heading goes under ``default_heading``
    (document title or filename stem) so it is still citable.
    """

    def __init__(self, default_heading: str, budget: TextBudget, key: str = "heading") -> None:
        self.budget = budget
        self.key = key
        self.default_heading = _collapse(default_heading)
        self.stack: list[tuple[int, str]] = []
        self.paragraphs: list[str] = []
        self.sections: list[Section] = []

    def heading(self, level: int, text: str) -> None:
        text = _collapse(text)
        if not text:
            return
        self.flush()
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, text))

    def add(self, text: str) -> None:
        if text and text.strip():
            self.paragraphs.append(self.budget.charge(text))

    def flush(self) -> None:
        text = _clean_text("\n\n".join(self.paragraphs))
        self.paragraphs = []
        if not text:
            return
        path = tuple(h for _, h in self.stack) or (self.default_heading,)
        self.budget.add_section()
        self.sections.append(Section(source_ref=f"{self.key}={path[-1]}", text=text, heading_path=path))

    def finish(self) -> list[Section]:
        self.flush()
        return self.sections


# --------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------

_BULLET_START = re.compile(r"^(?:[•●○◦▪▫■□‣–]\s|-\s)")
_SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]*$")


def _extract_pdf(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """One section per page (``page=N``, 1-based) so citations point at a page."""
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt_pdf(reader)
        pdf_pages_check(len(reader.pages), budget.limits)
        sections = []
        for number, page in enumerate(reader.pages, start=1):
            text = _pdf_page_text(budget.charge(page.extract_text() or ""))
            if text:
                budget.add_section()
                sections.append(Section(source_ref=f"page={number}", text=text, page=number))
        return sections
    except ExtractionError:
        raise
    except Exception as exc:  # corrupt PDFs raise anything from KeyError to PdfStreamError
        raise ExtractionError(f"the PDF could not be read: {exc}") from exc


def _decrypt_pdf(reader) -> None:
    """Many PDFs are 'encrypted' only with an owner password; the empty user password opens them."""
    from pypdf import PasswordType

    try:
        opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
    except Exception:  # unsupported algorithm or damaged encryption dictionary
        opened = False
    if not opened:
        raise ExtractionError("the PDF is encrypted")


def _pdf_page_text(raw: str) -> str:
    """Reflow pypdf's one-line-per-visual-line output into paragraphs.

    pypdf returns hard line breaks and almost never blank lines, so a page
    would be one giant paragraph. Lines are joined with spaces, words split
    by a line-end hyphen are rejoined (``pa-`` + ``pers``; ``PaSa-`` +
    ``GPT`` keeps its hyphen), and a paragraph ends after a line clearly
    shorter than its neighbours (the last line of a paragraph, a heading) or
    before a bullet. Comparing with the neighbours rather than the whole
    page keeps narrow text (beside a figure, in a column) together.
    Existing blank lines are kept.
    """
    paragraphs = []
    for block in _clean_text(raw).split("\n\n"):
        paragraphs.extend(_reflow(block.split("\n")))
    return "\n\n".join(paragraphs)


def _reflow(lines: list[str]) -> Iterator[str]:
    # Pieces are joined once per paragraph: growing one string line by line is
    # quadratic, and a hostile page can hold one paragraph of 100,000 lines.
    pieces: list[str] = []
    for index, line in enumerate(lines):
        tail = "".join(pieces[-3:])[-2:]
        if not pieces:
            pieces.append(line)
        elif _is_hyphenated_break(tail, line):
            pieces[-1] = pieces[-1][:-1]
            pieces.append(line)
        elif re.search(r"\w-$", tail):  # "PaSa-" + "GPT-4o": a compound, keep the hyphen
            pieces.append(line)
        else:
            pieces.extend((" ", line))
        previous = lines[index - 1] if index > 0 else ""
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if following and _ends_paragraph(line, previous, following):
            yield "".join(pieces)
            pieces = []
    if pieces:
        yield "".join(pieces)


def _is_hyphenated_break(current: str, line: str) -> bool:
    """``infor-`` + ``mation``: a lowercase letter on both sides of the break."""
    return (
        len(current) >= 2
        and current.endswith("-")
        and current[-2].isalpha()
        and current[-2].islower()
        and line[:1].islower()
    )


def _ends_paragraph(line: str, previous: str, following: str) -> bool:
    if _BULLET_START.match(following):
        return True
    if line.endswith("-"):
        return False
    width = max(len(previous), len(following))
    if len(line) < 0.6 * width:
        return True
    return bool(_SENTENCE_END.search(line)) and len(line) < 0.85 * width


# --------------------------------------------------------------------------
# DOCX
# --------------------------------------------------------------------------

_DOCX_HEADING = re.compile(r"^Heading ([1-9])$")


def _extract_docx(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Sections follow Title / Heading N styles; tables stay where they are in the body."""
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        raise ExtractionError(f"the file is not a valid DOCX document: {exc}") from exc
    title = _collapse(document.core_properties.title or "") or _stem(filename)
    builder = _HeadingSections(title, budget)
    for block in document.iter_inner_content():  # paragraphs and tables in body order
        if isinstance(block, Table):
            builder.add(_render_rows(_docx_table_rows(block), header_needs_two_cells=True))
            continue
        level = _docx_heading_level(block)
        if level is not None and len(block.text) <= MAX_HEADING_CHARS:
            builder.heading(level, block.text)
        else:
            builder.add(block.text)
    return builder.finish()


def _docx_heading_level(paragraph) -> int | None:
    """Title is level 0 so that Heading 1 sections nest under the document title."""
    name = paragraph.style.name if paragraph.style is not None else ""
    if name == "Title":
        return 0
    match = _DOCX_HEADING.match(name or "")
    return int(match.group(1)) if match else None


def _docx_table_rows(table) -> Iterator[list[str]]:
    """Rows aligned on the table grid; a horizontally merged cell counts once.

    ``row.cells`` repeats a merged cell for every grid column it spans; the
    repeats become empty cells so values stay under their own header.
    """
    for row in table.rows:
        texts, previous = [], None
        for cell in row.cells:
            texts.append("" if previous is not None and cell._tc is previous._tc else cell.text)
            previous = cell
        yield texts


# --------------------------------------------------------------------------
# PPTX
# --------------------------------------------------------------------------


def _extract_pptx(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """One section per slide (``slide=N``): all shape text, then the speaker notes."""
    import pptx

    try:
        presentation = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise ExtractionError(f"the file is not a valid PPTX presentation: {exc}") from exc
    budget.check_sections(len(presentation.slides), "slides")
    sections = []
    for number, slide in enumerate(presentation.slides, start=1):
        parts = [budget.charge(part) for part in _pptx_shape_texts(slide.shapes)]
        notes = _pptx_notes(slide)
        if notes:
            parts.append(f"Notes: {notes}")
        text = _clean_text("\n\n".join(parts))
        if not text:
            continue
        budget.add_section()
        title = slide.shapes.title
        title_text = _collapse(title.text_frame.text) if title is not None else ""
        sections.append(
            Section(
                source_ref=f"slide={number}",
                text=text,
                heading_path=(title_text,) if title_text else (),
                slide=number,
            )
        )
    return sections


def _pptx_shape_texts(shapes) -> Iterator[str]:
    """Text frames (one paragraph per slide paragraph), tables, and groups recursively."""
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _pptx_shape_texts(shape.shapes)
        elif shape.has_table:
            rows = ([cell.text for cell in row.cells] for row in shape.table.rows)
            yield _render_rows(rows, header_needs_two_cells=True)
        elif shape.has_text_frame:
            for paragraph in shape.text_frame.paragraphs:
                yield paragraph.text


def _pptx_notes(slide) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return _clean_text(frame.text) if frame is not None else ""


# --------------------------------------------------------------------------
# XLSX and CSV
# --------------------------------------------------------------------------


def _extract_xlsx(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """One section per worksheet (``sheet=NAME``); cached values, not formulas."""
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise ExtractionError(f"the file is not a valid XLSX workbook: {exc}") from exc
    try:
        budget.check_sections(len(workbook.worksheets), "worksheets")
        return [
            _sheet_section(sheet.title, sheet.iter_rows(values_only=True), budget)
            for sheet in workbook.worksheets
        ]
    except ExtractionError:
        raise
    except Exception as exc:  # sheet XML is parsed while rows stream: bad or hostile XML surfaces here
        raise ExtractionError(f"the XLSX workbook could not be read: {exc}") from exc
    finally:
        workbook.close()


def _extract_csv(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """A CSV is one sheet named after the file; the delimiter is sniffed."""
    text = _decode_text(data)
    try:
        dialect = csv.Sniffer().sniff(_sniff_sample(text), delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if filename.lower().endswith(".tsv") else csv.excel
    try:
        # Rows stream into the renderer so the text budget stops a huge file early.
        return [_sheet_section(_stem(filename), csv.reader(io.StringIO(text, newline=""), dialect), budget)]
    except csv.Error as exc:
        raise ExtractionError(f"the CSV could not be read: {exc}") from exc


def _sniff_sample(text: str) -> str:
    """The first lines of a CSV, at most CSV_SNIFF_CHARS, for csv.Sniffer.

    The sniffer's quote-guessing regex is worse than quadratic in its sample:
    64 KB of ``,"`` took minutes; 4 KB of it takes well under a second, and a
    few dozen rows are plenty to tell the delimiter.
    """
    sample = text[:CSV_SNIFF_CHARS]
    cut = sample.rfind("\n")
    return sample[:cut] if cut > 0 and len(text) > CSV_SNIFF_CHARS else sample


def _sheet_section(name: str, rows: Iterable[Sequence[object]], budget: TextBudget) -> Section:
    budget.add_section()
    return Section(source_ref=f"sheet={name}", text=_render_rows(rows, budget=budget), sheet=name)


# --------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------

_HTML_DROP = ("script", "style", "nav", "aside", "noscript", "form", "template", "svg", "iframe")
# MediaWiki "[edit]" links sit inside or next to every heading of the most
# commonly saved article pages and would end up in heading source_refs; its
# reference lists and "[1]" markers are citations, not content, yet the
# main-content extractor keeps them (Obama's page: 110,000 characters of them,
# outranking the article for questions about dates and sums).
_HTML_DROP_CLASSES = ("mw-editsection", "references", "reference")
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_BLOCKS = frozenset(
    "address article blockquote body caption dd details dialog div dl dt fieldset figcaption "
    "figure footer header hr li main ol p pre section summary ul".split()
)
_SECTIONING = ("article", "main", "section")


def _extract_html(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Sections by h1-h6, keeping only the blocks trafilatura counts as the page's main content.

    Headings always come from the page itself, so references stay the page's
    own ``heading=TEXT``; trafilatura only decides which paragraphs, lists
    and tables are content (it leaves out language-link lists, "Edit links",
    navigation, captions, hatnotes and other boilerplate). A heading left
    with no content yields no section.
    """
    html_elements_check(data, budget.limits)
    soup = _parse_html(data)
    title_tag = soup.find("title")
    title = _collapse(title_tag.get_text()) if title_tag else ""
    _drop_html_chrome(soup)
    is_content = _html_main_content_test(str(soup))
    # <main> holds the page's own content by definition; skip links, site
    # banners and sidebars outside it are chrome even when not marked up as such.
    root = soup.find("main") or soup.find(attrs={"role": "main"}) or soup.body or soup
    builder = _HeadingSections(title or _stem(filename), budget)
    walker = _HtmlWalker(builder, is_content)
    walker.walk(root)
    walker.end_paragraph()
    return builder.finish()


# A block shorter than this (in non-space characters) is main content only
# if trafilatura kept an element with exactly its text: short strings such as
# "Canada" or "Edit links" occur by chance inside longer content.
_HTML_SHORT_BLOCK_CHARS = 40


def _html_main_content_test(html: str) -> Callable[[str], bool]:
    """A test telling whether a block's text is part of the main content trafilatura extracts.

    When trafilatura finds no main content (a page under its minimum size,
    one that is nothing but a table), every block counts.
    """
    import trafilatura

    extracted = trafilatura.extract(
        html,
        output_format="html",
        include_tables=True,
        include_formatting=True,
        include_comments=False,
        include_images=False,
        include_links=False,
        favor_recall=True,
    )
    content = _parse_html(extracted.encode()).body if extracted else None
    if content is None or not content.get_text(strip=True):
        return lambda text: True
    whole = _squeeze(content.get_text())
    elements = {_squeeze(tag.get_text()) for tag in content.find_all(True)}

    def is_content(text: str) -> bool:
        squeezed = _squeeze(text)
        if len(squeezed) < _HTML_SHORT_BLOCK_CHARS:
            return squeezed in elements
        return squeezed in whole

    return is_content


def _squeeze(text: str) -> str:
    """Text without whitespace: trafilatura and the walker space inline elements differently."""
    return re.sub(r"\s+", "", text)


def _parse_html(data: bytes):
    """Bytes go to BeautifulSoup so it can honour ``<meta charset>``."""
    from bs4 import BeautifulSoup

    try:
        return BeautifulSoup(data, "lxml")
    except Exception:  # lxml missing: the stdlib parser is slower but always there
        return BeautifulSoup(data, "html.parser")


def _drop_html_chrome(soup) -> None:
    """Remove non-content elements: scripts, menus, forms, hidden elements.

    ``header``/``footer`` are dropped only at page level: inside ``main``,
    ``article`` or ``section`` they hold the content's own title (Wikipedia
    and MDN put the page ``<h1>`` there).
    """
    doomed = [
        *soup.find_all(_HTML_DROP),
        *soup.find_all(attrs={"role": "navigation"}),
        *soup.find_all(attrs={"aria-hidden": "true"}),  # invisible to readers too
        *soup.find_all(hidden=True),
        *soup.find_all(class_=_HTML_DROP_CLASSES),
    ]
    for tag in soup.find_all(("header", "footer")):
        if tag.find_parent(_SECTIONING) is None:
            doomed.append(tag)
    for tag in doomed:
        if not tag.decomposed:
            tag.decompose()


class _HtmlWalker:
    """Walk the DOM in order, turning block elements into paragraphs.

    Inline text accumulates until a block boundary; headings start a new
    section; tables are rendered row-wise like spreadsheets. Newlines in the
    source are layout, not content, except inside ``<pre>``; ``<br>`` breaks
    a line.
    """

    def __init__(self, builder: _HeadingSections, is_content: Callable[[str], bool]) -> None:
        self.builder = builder
        self.is_content = is_content
        self.in_caption = 0
        self.inline: list[str] = []
        self.in_pre = 0

    def walk(self, node) -> None:
        from bs4 import NavigableString, Tag

        for child in node.children:
            if isinstance(child, Tag):
                self.element(child)
            elif type(child) is NavigableString:  # not Comment, Doctype, CData...
                text = str(child)
                self.inline.append(text if self.in_pre else re.sub(r"[\r\n]+", " ", text))

    def element(self, tag) -> None:
        name = tag.name
        if name in _HTML_HEADINGS:
            self.end_paragraph()
            self.builder.heading(_HTML_HEADINGS[name], tag.get_text(" "))
        elif name == "table":
            self.end_paragraph()
            if self._table_is_content(tag):
                self.builder.add(_render_rows(_html_table_rows(tag), header_needs_two_cells=True))
        elif name == "br":
            self.inline.append("\n")
        elif name in _HTML_BLOCKS:
            self.end_paragraph()
            self.in_pre += name == "pre"
            self.in_caption += name == "figcaption"
            self.walk(tag)
            self.in_pre -= name == "pre"
            self.end_paragraph()
            self.in_caption -= name == "figcaption"
        else:
            self.walk(tag)

    def _table_is_content(self, table) -> bool:
        """Most of its cells are content (trafilatura drops a cell's image caption or hidden date)."""
        cells = [cell.get_text() for cell in table.find_all(("td", "th")) if cell.get_text(strip=True)]
        return sum(map(self.is_content, cells)) * 2 >= len(cells)

    def end_paragraph(self) -> None:
        text = "".join(self.inline)
        # trafilatura drops figures with their captions, but a caption on the
        # page's own figure states facts ("Obama won 332–206") found nowhere else.
        if text.strip() and (self.in_caption or self.is_content(text)):
            self.builder.add(text)
        self.inline = []


def _html_table_rows(table) -> Iterator[list[str]]:
    """Rows of this table only (nested tables are flattened into their cell's text)."""
    for row in table.find_all("tr"):
        if row.find_parent("table") is table:
            yield [cell.get_text(" ") for cell in row.find_all(("td", "th"), recursive=False)]


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

_MD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_MD_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A line that can be a setext heading: not blank, a list item, a quote or a table row.
_MD_PARAGRAPH_LINE = re.compile(r"^ {0,3}(?![-*+>|]|\d+[.)][ \t]|\s*$)")
_MD_INLINE = (
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # [text](url), ![alt](src)
    (re.compile(r"!?\[([^\]]*)\]\[[^\]]*\]"), r"\1"),  # [text][ref]
    (re.compile(r"<(https?://[^>]+)>"), r"\1"),  # <https://autolink>
    (re.compile(r"`+([^`]*)`+"), r"\1"),  # `code`
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),  # **strong**
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*"), r"\1"),  # *em*
    (re.compile(r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)"), r"\1"),  # _em_
    (re.compile(r"~~(.+?)~~"), r"\1"),  # ~~strike~~
)


def _extract_markdown(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Sections by ATX (``#``) and setext (underlined) headings.

    Lines inside code fences and YAML front matter are never headings. A
    setext heading is the single paragraph line right above the ``===`` /
    ``---`` underline; ``---`` after a blank line or a list item is a rule.
    """
    builder = _HeadingSections(_stem(filename), budget)
    text = _decode_text(data)
    text_size_check(text, budget.limits)
    body: list[str] = []
    fence = ""
    for number, line in enumerate(text.splitlines()):
        if fence:
            fence = "" if line.strip().startswith(fence) else fence
            body.append(line)
        elif number == 0 and line.strip() == "---":
            fence = "---"  # front matter runs to the next "---"
            body.append(line)
        elif match := _MD_FENCE.match(line):
            fence = match.group(1)
            body.append(line)
        elif match := _MD_ATX.match(line):
            builder.add("\n".join(body))
            body = []
            builder.heading(len(match.group(1)), _strip_inline_markdown(match.group(2) or ""))
        elif (match := _MD_SETEXT.match(line)) and body and _MD_PARAGRAPH_LINE.match(body[-1]):
            heading = body.pop()
            builder.add("\n".join(body))
            body = []
            level = 1 if match.group(1).startswith("=") else 2
            builder.heading(level, _strip_inline_markdown(heading))
        else:
            body.append(line)
    builder.add("\n".join(body))
    return builder.finish()


def _strip_inline_markdown(text: str) -> str:
    """``Install [Django](url) *now*`` -> ``Install Django now`` for source_refs."""
    for pattern, replacement in _MD_INLINE:
        text = pattern.sub(replacement, text)
    return _collapse(text)


# --------------------------------------------------------------------------
# Plain text (and reStructuredText)
# --------------------------------------------------------------------------

_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}[ \t]*$")
_RST_INLINE = (
    # :role:`text <target>`
    (re.compile(r":[\w:+.-]+:`([^`<]*?)\s*(?:<[^>]*>)?`"), lambda m: _rst_role_text(m[1])),
    (re.compile(r"`([^`<]*?)\s*(?:<[^>]*>)?`__?"), r"\1"),  # `link <url>`_
    (re.compile(r"``(.+?)``"), r"\1"),  # ``literal``
    (re.compile(r"\*\*(.+?)\*\*|\*(.+?)\*"), r"\1\2"),  # **strong**, *em*
)


def _extract_text(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Plain text, cut at section titles when it has recognisable ones.

    The rule, in order:

    1. reStructuredText titles: a non-indented line after a blank line (or
       an overline), directly underlined by one repeated punctuation
       character at least as long as the title (``Title`` / ``=====``). Levels
       follow the order in which adornment styles first appear, as in docutils.
    2. Otherwise ALL-CAPS title lines: a line of at most 80 characters alone
       between blank lines, with at least three capital letters, no lowercase
       letters and no trailing ``.``/``,``/``;``.
    3. Otherwise one section named after the file.

    Each section's ref is ``section=TITLE``; text before the first title goes
    under the filename stem. Title lines and their adornments are removed;
    inline markup (roles, literals, links) is stripped from rST titles.
    """
    text = _decode_text(data)
    text_size_check(text, budget.limits)
    lines = text.splitlines()
    builder = _HeadingSections(_stem(filename), budget, key="section")
    titles = _rst_titles(lines) or _caps_titles(lines)
    adornments = set().union(*(used for _, _, used in titles.values()))
    body: list[str] = []
    for index, line in enumerate(lines):
        if index in titles:
            builder.add("\n".join(body))
            body = []
            level, title, _ = titles[index]
            builder.heading(level, title)
        elif index not in adornments:
            body.append(line)
    builder.add("\n".join(body))
    return builder.finish()


def _rst_titles(lines: list[str]) -> dict[int, tuple[int, str, set[int]]]:
    """Map line index -> (level, title, indexes of its adornment lines)."""
    styles: list[tuple[str, bool]] = []
    titles: dict[int, tuple[int, str, set[int]]] = {}
    index = 0
    while index < len(lines) - 1:
        line, below = lines[index], lines[index + 1]
        above = lines[index - 1] if index > 0 else ""
        over = _RST_ADORNMENT.match(above)
        under = _RST_ADORNMENT.match(below)
        title = line.strip()
        is_title = (
            under is not None
            and title
            and not _RST_ADORNMENT.match(line)
            and len(below.rstrip()) >= len(title)
            and (over is not None or (not above.strip() and not line[:1].isspace()))
        )
        if is_title:
            overlined = over is not None and over.group(1) == under.group(1)
            style = (under.group(1), overlined)
            if style not in styles:
                styles.append(style)
            used = {index + 1} | ({index - 1} if overlined else set())
            titles[index] = (styles.index(style) + 1, _strip_inline_rst(title), used)
            index += 2
        else:
            index += 1
    return titles


def _strip_inline_rst(text: str) -> str:
    """``:mod:`django.contrib.gis``` -> ``django.contrib.gis`` for readable source_refs."""
    for pattern, replacement in _RST_INLINE:
        text = pattern.sub(replacement, text)
    return text


def _rst_role_text(target: str) -> str:
    """Sphinx shows ``:meth:`~a.b.c``` as ``c``."""
    return target[1:].rsplit(".", 1)[-1] if target.startswith("~") else target


def _caps_titles(lines: list[str]) -> dict[int, tuple[int, str, set[int]]]:
    titles = {}
    for index, line in enumerate(lines):
        title = line.strip()
        above = lines[index - 1] if index > 0 else ""
        below = lines[index + 1] if index + 1 < len(lines) else ""
        if (
            title
            and len(title) <= 80
            and not above.strip()
            and not below.strip()
            and sum(c.isupper() for c in title) >= 3
            and not any(c.islower() for c in title)
            and not title.endswith((".", ",", ";"))
        ):
            titles[index] = (1, title, set())
    return titles


_EXTRACTORS = {
    "pdf": _extract_pdf,
    "docx": _extract_docx,
    "pptx": _extract_pptx,
    "xlsx": _extract_xlsx,
    "csv": _extract_csv,
    "html": _extract_html,
    "markdown": _extract_markdown,
    "text": _extract_text,
}
