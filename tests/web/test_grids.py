"""A sheet's tables as the reader's grids (knowledge.web.grids), from chunks as ingestion writes them."""

from __future__ import annotations

from knowledge.models import Chunk
from knowledge.web.grids import sheet_grids

SAMPLES = {
    "kind": "sheet",
    "table": 0,
    "header": ["Case", "Tissue"],
    "header_row": 1,
    "caption": None,
    "columns": [0, 1],
}
LEGEND = {"kind": "sheet", "table": 1, "header": None, "header_row": None, "caption": None, "columns": [0, 1]}


def chunk(pk: int, grid: dict, rows: list[tuple[int, list[str]]]) -> Chunk:
    content, cells = "", []
    for number, values in rows:
        cells.append([number, values, len(content)])
        content += "; ".join(values) + "\n"
    return Chunk(pk=pk, content=content, source_ref="sheet=Samples", metadata={"grid": grid, "cells": cells})


def test_each_table_is_one_grid_its_rows_once_the_cited_row_singled_out():
    first = chunk(1, SAMPLES, [(2, ["T-01", "liver"]), (3, ["T-02", "kidney"])])
    overlapping = chunk(2, SAMPLES, [(3, ["T-02", "kidney"]), (4, ["T-03", "lung"])])
    legend = chunk(3, LEGEND, [(6, ["+", "very light"]), (7, ["++", "light"])])
    quote_start = overlapping.metadata["cells"][1][2]  # the quote starts on row 4's line
    samples, marks = sheet_grids(
        [first, overlapping, legend], cited=overlapping, quote=(quote_start, quote_start + 4)
    )
    assert samples["columns"] == ["Case", "Tissue"] and marks["columns"] == ["A", "B"]
    assert [row["n"] for row in samples["rows"]] == [2, 3, 4]
    assert [row["n"] for row in samples["rows"] if row["in_passage"]] == [3, 4]
    assert [row["n"] for row in samples["rows"] if row["quoted"]] == [4]
    assert not any(row["in_passage"] for row in marks["rows"])


def test_chunks_without_cells_make_no_grid():
    assert sheet_grids([Chunk(pk=1, content="A page of text.", source_ref="page=1", metadata={})]) == []
