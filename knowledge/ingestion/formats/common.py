"""Text helpers every format shares: decoding, whitespace, table rows, sections under headings.

Section text is normalised the same way for every format: whitespace inside a
line is collapsed and paragraphs are separated by one blank line, so the
chunker only has to split on ``"\\n\\n"``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from knowledge.ingestion.limits import TextBudget
from knowledge.ingestion.types import Section

# Rows of a table or sheet per paragraph: small enough that the paragraph
# chunker can split a big sheet, large enough to keep related rows together.
ROWS_PER_PARAGRAPH = 20


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def strip_bom(data: bytes) -> bytes:
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM) first; Latin-1 never fails, so it is the fallback."""
    if data.startswith(UTF16_BOMS):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def collapse(text: str) -> str:
    """One line: runs of any whitespace (tabs, NBSP, ideographic space) become one space."""
    return " ".join(text.split())


def clean_text(text: str) -> str:
    """Normalise a block of text: collapsed lines, one blank line between paragraphs.

    Control characters are dropped too (PostgreSQL text cannot hold NUL).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n")
    text = _CONTROL_CHARS.sub("", text.replace("\f", "\n\n"))
    paragraphs: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        line = collapse(line)
        if line:
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    return "\n\n".join(paragraphs)


def filename_stem(filename: str) -> str:
    return collapse(PurePath(filename).stem) or filename


def cell_text(value: object) -> str:
    """Spreadsheet values as a person would read them (12000, not 12000.0)."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return collapse(str(value))


def render_rows(
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
        cells = [cell_text(cell) for cell in row]
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


def table_text(header: Sequence[str] | None, rows: Iterable[Sequence[object]]) -> str:
    """A table's rows as lines: ``Header1: v1; Header2: v2`` under a header, ``v1; v2`` without one
    (empty cells skipped), with a blank line every ``ROWS_PER_PARAGRAPH`` rows for the chunker."""
    lines = []
    for row in rows:
        cells = [cell_text(cell) for cell in row]
        lines.append(_render_row(header, cells) if header else "; ".join(c for c in cells if c))
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


class HeadingSections:
    """Collect paragraphs under a stack of headings and emit one Section per heading.

    Shared by DOCX, HTML, Markdown and text: they differ only in how they find
    headings. Text before the first heading goes under ``default_heading``
    (document title or filename stem) so it is still citable.
    """

    def __init__(self, default_heading: str, budget: TextBudget, key: str = "heading") -> None:
        self.budget = budget
        self.key = key
        self.default_heading = collapse(default_heading)
        self.stack: list[tuple[int, str]] = []
        self.paragraphs: list[str] = []
        self.sections: list[Section] = []

    def heading(self, level: int, text: str) -> None:
        text = collapse(text)
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
        text = clean_text("\n\n".join(self.paragraphs))
        self.paragraphs = []
        if not text:
            return
        path = tuple(h for _, h in self.stack) or (self.default_heading,)
        self.budget.add_section()
        self.sections.append(Section(source_ref=f"{self.key}={path[-1]}", text=text, heading_path=path))

    def finish(self) -> list[Section]:
        self.flush()
        return self.sections
