"""The tables on a sheet: where each starts, and which row, if any, is its header.

A sheet often holds more than one table: a second one lower down, one beside another, a legend
under a table. Rows are cut into blocks at empty rows, and a block into side-by-side tables at
columns empty in all its rows. A block's first row is its header when it is a row of distinct text
cells above rows of values (some column under it holds numbers, dates or booleans, or, as
``csv.Sniffer.has_header`` votes, its cells differ from the values under them in length where
those lengths are fixed); otherwise the table has none. A block without a header continues the
table above it when its cells are of the same kinds, column by column (a table broken by an empty
row); otherwise it is a table of its own. A single text cell above a header is the table's caption.

A CSV file conventionally starts with its header, so for the first table of a CSV (``header_first``)
a row of distinct names is the header unless the evidence votes against it: a tie, as when every
column holds free text, goes to the header.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MAX_TABLES = 50  # per sheet; the rest is one table without a header
HEADER_EVIDENCE_ROWS = 20  # rows under a candidate header its test looks at
MIN_LENGTH_EVIDENCE = 2  # values of one fixed length it takes to tell a name of another length

_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:[,\s]\d{3})+|\d+)(?:[.,]\d+)?%?$")
_DATE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}$")


@dataclass
class SheetTable:
    columns: tuple[int, int]  # the first and last column (0-based, inclusive) of the table
    header: tuple[str, ...] | None = None  # one name per column, "" where the header cell is empty
    header_row: int | None = None  # the sheet's row number of the header
    caption: str | None = None
    rows: list[tuple[int, tuple]] = field(default_factory=list)  # (row number, its cells in columns)


def sheet_tables(
    rows: Iterable[tuple[int, Sequence[object]]], *, header_first: bool = False
) -> list[SheetTable]:
    """The tables of a sheet's ``rows``, each a (row number, cells) pair in sheet order;
    ``header_first`` for a CSV, whose first row is by convention its header."""
    tables: list[SheetTable] = []
    for block in _blocks(rows):
        groups = _column_groups(block)
        span = (groups[0][0], groups[-1][1])
        if tables and _continues(tables[-1], span, [(n, _within(cells, span)) for n, cells in block]):
            _add(tables, span, [(n, _within(cells, span)) for n, cells in block])
            continue  # a table broken by an empty row: its gaps are empty cells, not another table
        for columns in groups:
            part = [(number, _within(cells, columns)) for number, cells in block]
            part = [(number, cells) for number, cells in part if _filled(cells)]
            if part:
                _add(tables, columns, part, header_first=header_first and not tables)
    return _capped(tables)


def cell_kind(value: object) -> str:
    """number, date, bool, word (letters and spaces), code (letters with digits or marks, "T-01")
    or symbol ("++"); "" for an empty cell."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (datetime.date, datetime.time)):
        return "date"
    text = str(value).strip()
    if _NUMBER.match(text):
        return "number"
    if _DATE.match(text):
        return "date"
    if not any(ch.isalnum() for ch in text):
        return "symbol"
    if all(ch.isalpha() or ch.isspace() for ch in text):
        return "word"
    return "code"


def _blocks(rows: Iterable[tuple[int, Sequence[object]]]) -> list[list[tuple[int, tuple]]]:
    blocks, current = [], []
    for number, cells in rows:
        cells = tuple(cells)
        if _filled(cells):
            current.append((number, cells))
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _column_groups(block: list[tuple[int, tuple]]) -> list[tuple[int, int]]:
    """Runs of columns that hold something in some row of the block."""
    used = sorted({i for _, cells in block for i, cell in enumerate(cells) if cell_kind(cell)})
    groups, start = [], None
    for position, column in enumerate(used):
        if start is None:
            start = column
        if position + 1 == len(used) or used[position + 1] != column + 1:
            groups.append((start, column))
            start = None
    return groups


def _add(
    tables: list[SheetTable], columns: tuple[int, int], part: list[tuple[int, tuple]], *, header_first=False
) -> None:
    caption = None
    if len(part) > 2 and _single_text(part[0][1]) and _is_header(part[1][1], part[2:]):
        caption = _single_text(part[0][1])
        part = part[1:]
    if len(part) > 1 and _is_header(part[0][1], part[1:], tie=header_first and caption is None):
        header_row, header = part[0][0], tuple(_text(cell) for cell in part[0][1])
        body = [(n, cells) for n, cells in part[1:] if tuple(_text(c) for c in cells) != header]
        tables.append(SheetTable(columns, header, header_row, caption, body))
        return
    previous = tables[-1] if tables else None
    if caption is None and previous is not None and _continues(previous, columns, part):
        offset = columns[0] - previous.columns[0]
        width = previous.columns[1] - previous.columns[0] + 1
        previous.rows += [(n, _padded(cells, offset, width)) for n, cells in part]
        return
    tables.append(SheetTable(columns, None, None, caption, part))


def _is_header(cells: tuple, below: list[tuple[int, tuple]], *, tie: bool = False) -> bool:
    """Whether ``cells`` name the columns of the rows ``below``; ``tie`` is the answer when the
    evidence is even."""
    names = [_text(cell) for cell in cells if cell_kind(cell)]
    if len(names) < 2 or any(cell_kind(cell) not in ("", "word", "code") for cell in cells):
        return False  # a header names its columns: text with letters, no values and no bare marks
    if len({name.casefold() for name in names}) != len(names):
        return False
    values = [row for _, row in below[:HEADER_EVIDENCE_ROWS]]
    if not values:
        return False
    vote = 0
    for column, cell in enumerate(cells):
        if not cell_kind(cell):
            continue
        under = [row[column] for row in values if column < len(row) and cell_kind(row[column])]
        if any(cell_kind(value) in ("number", "date", "bool") for value in under):
            return True
        lengths = {len(_text(value)) for value in under}
        if (
            len(lengths) == 1 and len(under) >= MIN_LENGTH_EVIDENCE
        ):  # fixed-length values ("T-01", "A"): a name of another length is a header
            vote += 1 if len(_text(cell)) not in lengths else -1
    return vote > 0 or (tie and vote == 0)


def _continues(previous: SheetTable, columns: tuple[int, int], part: list[tuple[int, tuple]]) -> bool:
    if previous.header is None and not previous.rows:
        return False
    if columns[0] < previous.columns[0] or columns[1] > previous.columns[1]:
        return False
    offset = columns[0] - previous.columns[0]
    for column in range(columns[1] - columns[0] + 1):
        theirs = {cell_kind(row[offset + column]) for _, row in previous.rows if offset + column < len(row)}
        ours = {cell_kind(row[column]) for _, row in part if column < len(row)} - {""}
        if not ours <= theirs - {""}:
            return False
    return True


def _capped(tables: list[SheetTable]) -> list[SheetTable]:
    if len(tables) <= MAX_TABLES:
        return tables
    rest = tables[MAX_TABLES - 1 :]
    first = min(t.columns[0] for t in rest)
    last = max(t.columns[1] for t in rest)
    rows = sorted(
        (n, _padded(cells, t.columns[0] - first, last - first + 1)) for t in rest for n, cells in t.rows
    )
    return [*tables[: MAX_TABLES - 1], SheetTable((first, last), rows=rows)]


def _within(cells: tuple, columns: tuple[int, int]) -> tuple:
    first, last = columns
    return tuple(cells[i] if i < len(cells) else None for i in range(first, last + 1))


def _padded(cells: tuple, offset: int, width: int) -> tuple:
    return tuple([None] * offset + list(cells) + [None] * max(0, width - offset - len(cells)))[:width]


def _filled(cells: Sequence[object]) -> bool:
    return any(cell_kind(cell) for cell in cells)


def _single_text(cells: tuple) -> str | None:
    filled = [cell for cell in cells if cell_kind(cell)]
    return _text(filled[0]) if len(filled) == 1 and cell_kind(filled[0]) in ("word", "code") else None


def _text(cell: object) -> str:
    return "" if cell is None else str(cell).strip()
