"""A sheet's tables as grids for the reader: each table's rows once, in sheet order, under its header
(or its column letters when it has none), the cited passage's rows marked and the cited row singled out.

The rows come from the chunks (``metadata["cells"]``: row number, cells, where the row's line starts in
the chunk's content), written at ingestion by knowledge.ingestion.formats.sheets; chunks that overlap
repeat whole rows, so each row is kept once.
"""

from __future__ import annotations

from string import ascii_uppercase


def sheet_grids(chunks: list, cited=None, quote: tuple[int, int] | None = None) -> list[dict]:
    """The grids of one section's chunks (a sheet), one per table, in the order the tables start."""
    grids: dict[int, dict] = {}
    for chunk in chunks:
        metadata = chunk.metadata or {}
        if not metadata.get("cells") or not metadata.get("grid"):
            continue
        grid = grids.setdefault(metadata["grid"].get("table", 0), _grid(metadata["grid"]))
        in_passage = cited is not None and chunk.pk == cited.pk
        quoted = quoted_row(metadata["cells"], quote) if in_passage else None
        for number, cells, _offset in metadata["cells"]:
            row = grid["rows"].setdefault(
                number, {"n": number, "cells": cells, "in_passage": False, "quoted": False}
            )
            row["in_passage"] = row["in_passage"] or in_passage
            row["quoted"] = row["quoted"] or number == quoted
    return [{**grid, "rows": [grid["rows"][n] for n in sorted(grid["rows"])]} for grid in grids.values()]


# Rows of the cited row's table shown on each side of the cited passage in the chat's side panel.
PANEL_ROWS_AROUND = 10


def cited_grid(chunks: list, cited, quote: tuple[int, int] | None) -> dict | None:
    """The cited chunk's table as a grid around its rows, for the side panel; None for other chunks."""
    table = (cited.metadata or {}).get("grid", {}).get("table")
    if table is None or not (cited.metadata or {}).get("cells"):
        return None
    grid = next(g for g in sheet_grids(chunks, cited, quote) if g["index"] == table + 1)
    marked = [i for i, row in enumerate(grid["rows"]) if row["in_passage"]]
    first, last = max(0, marked[0] - PANEL_ROWS_AROUND), marked[-1] + PANEL_ROWS_AROUND + 1
    return {**grid, "rows": grid["rows"][first:last]}


def _grid(stored: dict) -> dict:
    first, last = stored.get("columns") or (0, 0)
    header = stored.get("header")
    columns = header if header else [_column_letter(index) for index in range(first, last + 1)]
    return {
        "index": stored.get("table", 0) + 1,
        "caption": stored.get("caption"),
        "columns": columns,
        "rows": {},
    }


def quoted_row(cells: list, quote: tuple[int, int] | None) -> int | None:
    """The row whose line holds the quote's start: the last row starting at or before it; without a
    quote, the cited passage's first row."""
    if quote is None:
        return cells[0][0] if cells else None
    starting = [(offset, number) for number, _cells, offset in cells if offset <= quote[0]]
    return max(starting)[1] if starting else None


def _column_letter(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA, as a spreadsheet names its columns."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = ascii_uppercase[remainder] + letters
    return letters
