"""PDF: one section per page (``page=N``), lines reflowed into paragraphs, without the headers and
footers that run across its pages (pdf_running_lines); a page whose text layer is
not text (a scan, or a font map that decodes to no text: knowledge.ingestion.ocr.needs_ocr) is drawn
and read by OCR; each table on a page is a section of its own on that page, one row per line with
its headers (pdf_tables.py)."""

from __future__ import annotations

import contextlib
import io
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from knowledge.ingestion.formats.common import clean_text, render_rows, table_text
from knowledge.ingestion.formats.pdf_content import pdf_content_check
from knowledge.ingestion.formats.pdf_running_lines import RunningLines
from knowledge.ingestion.formats.pdf_tables import PdfTable, line_key, page_tables, pages_with_rules
from knowledge.ingestion.limits import (
    IngestLimits,
    LimitExceeded,
    TextBudget,
    page_cpu_check,
    pdf_pages_check,
)
from knowledge.ingestion.ocr import OCR_DPI, image_pixels_check, needs_ocr, ocr_image, ocr_pages_check
from knowledge.ingestion.reporting import page_stage, report_skipped, report_stage
from knowledge.ingestion.types import ExtractionError, Section, UnreadableDocument

_BULLET_START = re.compile(r"^(?:[•●○◦▪▫■□‣–]\s|-\s)")
_SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]*$")


def extract_pdf(filename: str, data: bytes, budget: TextBudget) -> Iterator[Section]:
    """One section per page (``page=N``, 1-based) so citations point at a page.

    Pages are yielded as they are read: pypdf is the slow reader, and the
    pipeline chunks and embeds the first pages while the next ones are read.
    """
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt_pdf(reader)
        pdf_pages_check(len(reader.pages), budget.limits)
        pdf_content_check(reader.pages, budget.limits)
        scans = _ScannedPages(data, budget.limits)
        with contextlib.closing(_Tables(data, budget.limits)) as tables:
            yield from _pages(reader, scans, tables, budget)
    except ExtractionError:
        raise
    except Exception as exc:  # corrupt PDFs raise anything from KeyError to PdfStreamError
        raise UnreadableDocument(f"the PDF is damaged or incomplete ({exc})") from exc


def _pages(reader, scans, tables, budget: TextBudget) -> Iterator[Section]:
    """Each page's text (its text layer, or OCR where it has none) without the lines that run
    across its pages (pdf_running_lines: headers and footers are not content), then its tables.

    A page is written once the pages after it that decide its running lines are read."""
    running = RunningLines()
    total = len(reader.pages)
    for number, page in enumerate(reader.pages, start=1):
        raw, read = _page_read(number, total, page, scans, tables, budget.limits)
        for text, removed, done in running.feed(raw, read):
            yield from _page_sections(text, removed, done, budget)
    for text, removed, done in running.finish():
        yield from _page_sections(text, removed, done, budget)


@dataclass(frozen=True)
class _PageRead:
    number: int
    metadata: dict  # OCR's, for a page read by OCR
    tables: list  # PdfTables found on the page (none on a page read by OCR)


def _page_read(number: int, total: int, page, scans, tables, limits) -> tuple[str, _PageRead]:
    report_stage(page_stage(number, total))
    # This thread's CPU time: in a worker, the encoder's threads share the process.
    started = time.thread_time()
    raw = page.extract_text() or ""
    page_cpu_check(f"page {number}", time.thread_time() - started, limits)
    if needs_ocr(raw):
        report_stage(page_stage(number, total, ocr=True))
        raw, metadata = scans.read(number)
        return raw, _PageRead(number, metadata, [])
    return raw, _PageRead(number, {}, tables.read(number))


def _page_sections(raw: str, removed: list[str], read: _PageRead, budget: TextBudget) -> Iterator[Section]:
    text = _pdf_page_text(budget.charge(_without_table_lines(raw, read.tables)))
    if text:
        budget.add_section()
        metadata = {**read.metadata, "running_lines": len(removed)} if removed else read.metadata
        yield Section(source_ref=f"page={read.number}", text=text, page=read.number, metadata=metadata)
    yield from _table_sections(read.number, read.tables, budget)


class _ScannedPages:
    """The pages without a usable text layer, drawn with PDFium and read by OCR, one at a time.

    The PDF is opened for drawing only when the first such page is met, so text PDFs never pay for
    it. A page that cannot be drawn or read is left out and reported, not fatal to the document.
    """

    def __init__(self, data: bytes, limits: IngestLimits) -> None:
        self.data, self.limits = data, limits
        self.document = None
        self.read_pages = 0

    def read(self, number: int) -> tuple[str, dict]:
        self.read_pages += 1
        ocr_pages_check(self.read_pages, self.limits)
        try:
            image = self._drawn(number)
            started = time.thread_time()
            result = ocr_image(image)
            page_cpu_check(f"page {number} (OCR)", time.thread_time() - started, self.limits)
        except LimitExceeded:
            raise
        except Exception as exc:  # a page PDFium cannot draw, or an image Tesseract cannot read
            report_skipped(f"page {number} could not be read by OCR ({exc})")
            return "", {}
        return result.text, {"ocr": True, "ocr_confidence": round(result.confidence, 1)}

    def _drawn(self, number: int):
        import pypdfium2 as pdfium

        if self.document is None:
            self.document = pdfium.PdfDocument(self.data)
        page = self.document[number - 1]
        width, height = page.get_size()  # points: 1/72 inch
        scale = OCR_DPI / 72
        image_pixels_check(
            int(width * scale), int(height * scale), self.limits, f"page {number} drawn for OCR"
        )
        return page.render(scale=scale, grayscale=True).to_pil()


class _Tables:
    """The tables of the pages that draw rules (pdf_tables.py), read with pdfplumber one page at a
    time. A page whose tables cannot be read keeps its text layer as it is (reported)."""

    def __init__(self, data: bytes, limits: IngestLimits) -> None:
        self.data, self.limits = data, limits
        self.pages: set[int] | None = None
        self.document = None

    def read(self, number: int) -> list[PdfTable]:
        started = time.thread_time()
        try:
            if self.pages is None:
                self.pages = pages_with_rules(self.data)
            if number not in self.pages:
                return []
            page = self._document().pages[number - 1]
            try:
                return page_tables(page)
            finally:
                page.close()  # drops the page's layout: memory stays one page deep
        except Exception as exc:  # PDFium's and pdfminer's errors on a damaged page are of many kinds
            report_skipped(
                f"the tables of page {number} could not be read, its text is kept as it is ({exc})"
            )
            if self.pages is None:
                self.pages = set()  # the search for rules itself failed: not again on every page
            return []
        finally:
            page_cpu_check(f"page {number} (tables)", time.thread_time() - started, self.limits)

    def close(self) -> None:
        if self.document is not None:
            self.document.close()

    def _document(self):
        import pdfplumber

        if self.document is None:
            self.document = pdfplumber.open(io.BytesIO(self.data))
        return self.document


def _without_table_lines(raw: str, tables: list[PdfTable]) -> str:
    """The page's text without the lines its tables hold: they are given row by row, with headers."""
    if not tables:
        return raw
    keys = frozenset().union(*(table.lines for table in tables))
    return "\n".join(line for line in raw.split("\n") if line_key(line) not in keys)


def _table_sections(number: int, tables: list[PdfTable], budget: TextBudget) -> Iterator[Section]:
    """One section per table, on its page, under its caption ("Table 5: ...") or "Table K on page N"."""
    for index, table in enumerate(tables, start=1):
        caption = table.caption or f"Table {index} on page {number}"
        text = budget.charge(render_rows(table.rows, header_needs_two_cells=True))
        if text:
            budget.add_section()
            header = _table_header(table)
            body = table.rows[1:] if header else table.rows
            yield Section(
                source_ref=f"page={number}",
                text=text,
                page=number,
                heading_path=(caption,),
                metadata={
                    "table": caption,
                    "grid": {
                        "kind": "pdf",
                        "table": index - 1,
                        "header": header,
                        "caption": caption,
                        "columns": [0, max(len(row) for row in table.rows) - 1],
                    },
                },
                rows=_row_offsets(text, header, body),
            )


def _table_header(table: PdfTable) -> list[str] | None:
    """The table's header row, as render_rows reads it: a first row of two cells or more."""
    first = table.rows[0] if table.rows else ()
    return list(first) if sum(1 for cell in first if cell) >= 2 else None


def _row_offsets(text: str, header, body) -> tuple[tuple[int, int, tuple[str, ...]], ...]:
    """Each body row (numbered from 1) with where its line starts in the table's text."""
    rows, position = [], 0
    for number, cells in enumerate(body, start=1):
        line = table_text(header, [cells])
        found = text.find(line, position) if line else -1
        if found < 0:
            continue
        rows.append((found, number, tuple(cells)))
        position = found + len(line)
    return tuple(rows)


def _decrypt_pdf(reader) -> None:
    """Many PDFs are 'encrypted' only with an owner password; the empty user password opens them."""
    from pypdf import PasswordType

    try:
        opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
    except Exception:  # unsupported algorithm or damaged encryption dictionary
        opened = False
    if not opened:
        raise UnreadableDocument("the PDF is encrypted")


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
    for block in clean_text(raw).split("\n\n"):
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
