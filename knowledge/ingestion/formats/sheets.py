"""Excel (XLSX) and CSV: one section per table on a sheet (each ``sheet=NAME``; sheet_tables finds
where each table starts and its header, if any), rows as ``Header: value`` lines under a header and
as plain ``value; value`` lines without one."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence

from knowledge.ingestion.formats.common import cell_text, decode_text, filename_stem, table_text
from knowledge.ingestion.formats.sheet_tables import SheetTable, sheet_tables
from knowledge.ingestion.limits import TextBudget
from knowledge.ingestion.types import ExtractionError, Section, UnreadableDocument

# Characters of a CSV given to csv.Sniffer (see _sniff_sample).
CSV_SNIFF_CHARS = 4096


def extract_xlsx(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """One section per worksheet (``sheet=NAME``); cached values, not formulas."""
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise UnreadableDocument(f"the file is not a valid XLSX workbook: {exc}") from exc
    try:
        budget.check_sections(len(workbook.worksheets), "worksheets")
        return [
            section
            for sheet in workbook.worksheets
            for section in _sheet_sections(sheet.title, sheet.iter_rows(values_only=True), budget)
        ]
    except ExtractionError:
        raise
    except Exception as exc:  # sheet XML is parsed while rows stream: bad or hostile XML surfaces here
        raise UnreadableDocument(f"the XLSX workbook could not be read: {exc}") from exc
    finally:
        workbook.close()


def extract_csv(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """A CSV is one sheet named after the file; the delimiter is sniffed."""
    text = decode_text(data)
    try:
        dialect = csv.Sniffer().sniff(_sniff_sample(text), delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if filename.lower().endswith(".tsv") else csv.excel
    try:
        # Rows stream into the renderer so the text budget stops a huge file early.
        return _sheet_sections(
            filename_stem(filename),
            csv.reader(io.StringIO(text, newline=""), dialect),
            budget,
            header_first=True,
        )
    except csv.Error as exc:
        raise UnreadableDocument(f"the CSV could not be read: {exc}") from exc


def _sniff_sample(text: str) -> str:
    """The first lines of a CSV, at most CSV_SNIFF_CHARS, for csv.Sniffer.

    The sniffer's quote-guessing regex is worse than quadratic in its sample:
    64 KB of ``,"`` took minutes; 4 KB of it takes well under a second, and a
    few dozen rows are plenty to tell the delimiter.
    """
    sample = text[:CSV_SNIFF_CHARS]
    cut = sample.rfind("\n")
    return sample[:cut] if cut > 0 and len(text) > CSV_SNIFF_CHARS else sample


def _sheet_sections(
    name: str, rows: Iterable[Sequence[object]], budget: TextBudget, *, header_first: bool = False
) -> list[Section]:
    """One section per table of the sheet; an empty sheet is one empty section. ``header_first``:
    a CSV's first row is its header unless the evidence votes against (see sheet_tables)."""
    tables = sheet_tables(_charged(rows, budget), header_first=header_first)
    if not tables:
        budget.add_section()
        return [Section(source_ref=f"sheet={name}", text="", sheet=name)]
    sections = []
    for index, table in enumerate(tables):
        budget.add_section()
        text = table_text(table.header, (cells for _, cells in table.rows))
        sections.append(
            Section(
                source_ref=f"sheet={name}",
                text=text,
                heading_path=(table.caption,) if table.caption else (),
                sheet=name,
                metadata={"grid": _grid(index, table)},
                rows=_row_offsets(text, table),
            )
        )
    return sections


def _row_offsets(text: str, table: SheetTable) -> tuple[tuple[int, int, tuple[str, ...]], ...]:
    """Each row of the table with where its line starts in the section's text (the lines are in row
    order, so each is found after the one before)."""
    rows, position = [], 0
    for number, cells in table.rows:
        shown = tuple(cell_text(cell) for cell in cells)
        line = table_text(table.header, [cells])
        found = text.find(line, position)
        if found < 0:
            continue
        rows.append((found, number, shown))
        position = found + len(line)
    return tuple(rows)


def _charged(rows: Iterable[Sequence[object]], budget: TextBudget) -> Iterator[tuple[int, tuple]]:
    """The sheet's rows with their row numbers (from 1), each charged to the text budget as it
    streams in, so a huge sheet stops at the text limit instead of being read whole."""
    for number, row in enumerate(rows, start=1):
        cells = tuple(row)
        budget.charge("; ".join(text for text in (cell_text(cell) for cell in cells) if text))
        yield number, cells


def _grid(index: int, table: SheetTable) -> dict:
    """Where the table sits on its sheet, for the reader to draw it as a grid."""
    return {
        "kind": "sheet",
        "table": index,
        "header": list(table.header) if table.header else None,
        "header_row": table.header_row,
        "caption": table.caption,
        "columns": list(table.columns),
    }
