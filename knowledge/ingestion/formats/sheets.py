"""Excel (XLSX) and CSV: one section per sheet (``sheet=NAME``), rows as ``Header: value`` lines."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from knowledge.ingestion.formats.common import decode_text, filename_stem, render_rows
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
            _sheet_section(sheet.title, sheet.iter_rows(values_only=True), budget)
            for sheet in workbook.worksheets
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
        return [
            _sheet_section(
                filename_stem(filename), csv.reader(io.StringIO(text, newline=""), dialect), budget
            )
        ]
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


def _sheet_section(name: str, rows: Iterable[Sequence[object]], budget: TextBudget) -> Section:
    budget.add_section()
    return Section(source_ref=f"sheet={name}", text=render_rows(rows, budget=budget), sheet=name)
