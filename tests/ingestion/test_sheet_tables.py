"""Where each table on a sheet starts and which row is its header
(knowledge.ingestion.formats.sheet_tables)."""

from __future__ import annotations

import datetime

from knowledge.ingestion.formats.sheet_tables import MAX_TABLES, cell_kind, sheet_tables


def numbered(rows: list[list]) -> list[tuple[int, list]]:
    return list(enumerate(rows, start=1))


def test_a_table_broken_by_an_empty_row_is_one_table_under_its_header():
    rows = [[], [None, "Item", "Count", "Price"], [None, "Bolt", 2.0, 0.25], [], [None, "Nut", None, 0.1]]
    [table] = sheet_tables(numbered(rows))
    assert table.header == ("Item", "Count", "Price") and table.header_row == 2 and table.columns == (1, 3)
    assert table.rows == [(3, ("Bolt", 2.0, 0.25)), (5, ("Nut", None, 0.1))]


def test_a_second_table_lower_on_the_sheet_has_its_own_header_or_none():
    rows = [
        ["Case # (aka tissue code)", "Tissue", "Stain intensity"],
        ["T-01", "liver", 2],
        ["T-02", "kidney", 3],
        [],
        ["+", "very light"],
        ["++", "light"],
        ["+++", "strong"],
        [],
        ["Stain", "Supplier", "Lot"],
        ["DAB", "Acme", 1942],
    ]
    first, legend, stains = sheet_tables(numbered(rows))
    assert first.header == ("Case # (aka tissue code)", "Tissue", "Stain intensity")
    assert [n for n, _ in first.rows] == [2, 3]
    assert legend.header is None and legend.rows == [
        (5, ("+", "very light")),
        (6, ("++", "light")),
        (7, ("+++", "strong")),
    ]
    assert stains.header == ("Stain", "Supplier", "Lot") and stains.rows == [(10, ("DAB", "Acme", 1942))]


def test_tables_side_by_side_and_a_caption_above_a_header():
    rows = [
        ["Tissue samples", None, None, None, "Reagents", None],
        ["Code", "Weight", None, None, "Name", "Opened"],
        ["T-01", 1.5, None, None, "Xylene", datetime.date(2026, 1, 5)],
        ["T-02", 2.25, None, None, "Ethanol", datetime.date(2026, 2, 9)],
    ]
    left, right = sheet_tables(numbered(rows))
    assert (left.caption, left.header, left.columns) == ("Tissue samples", ("Code", "Weight"), (0, 1))
    assert (right.caption, right.header, right.columns) == ("Reagents", ("Name", "Opened"), (4, 5))
    assert [n for n, _ in right.rows] == [3, 4]


def test_a_first_row_of_text_over_text_of_any_length_is_not_taken_for_a_header():
    rows = [["Alice", "Paris"], ["Bob", "Lyon"], ["Chloé", "Marseille"]]
    [table] = sheet_tables(numbered(rows))
    assert table.header is None and len(table.rows) == 3
    # Fixed-length codes under names of another length: the names are a header (csv.Sniffer's vote).
    [coded] = sheet_tables(numbered([["Site", "Grade"], ["AB-12", "A"], ["CD-34", "B"], ["EF-56", "C"]]))
    assert coded.header == ("Site", "Grade")


def test_a_repeated_header_inside_a_long_table_is_not_a_row():
    rows = [["Name", "Age"], ["Ann", 31], ["Name", "Age"], ["Ben", 45]]
    [table] = sheet_tables(numbered(rows))
    assert [cells for _, cells in table.rows] == [("Ann", 31), ("Ben", 45)]


def test_a_sheet_of_many_small_tables_is_capped():
    rows = []
    for n in range(MAX_TABLES + 10):
        rows += [[f"Key{n}", "Value"], [f"k{n}", n], []]
    tables = sheet_tables(numbered(rows))
    assert len(tables) == MAX_TABLES and tables[-1].header is None
    assert sum(len(t.rows) for t in tables) > MAX_TABLES  # nothing is dropped


def test_cell_kinds():
    kinds = [
        cell_kind(v) for v in (None, " ", 3, 2.5, True, "1,234.5", "12%", "2026-11-29", "liver", "T-01", "++")
    ]
    assert kinds == ["", "", "number", "number", "bool", "number", "number", "date", "word", "code", "symbol"]


def test_a_workbook_with_two_tables_quotes_each_row_under_its_own_header_or_none():
    import io

    import openpyxl

    from knowledge.ingestion.extract import extract_sections

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Samples"
    for row in (
        ["Case # (aka tissue code)", "Tissue", "Stain intensity"],
        ["T-01", "liver", 2],
        ["T-02", "kidney", 3],
        [],
        ["+", "very light"],
        ["++", "light"],
    ):
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    sections = extract_sections("samples.xlsx", buffer.getvalue())
    assert [(s.source_ref, s.text) for s in sections] == [
        (
            "sheet=Samples",
            "Case # (aka tissue code): T-01; Tissue: liver; Stain intensity: 2\n"
            "Case # (aka tissue code): T-02; Tissue: kidney; Stain intensity: 3",
        ),
        ("sheet=Samples", "+; very light\n++; light"),
    ]
    assert sections[0].metadata["grid"]["header_row"] == 1 and sections[1].metadata["grid"]["header"] is None


def test_a_csv_first_row_of_names_over_free_text_is_its_header_and_a_row_of_values_is_not():
    named = [(1, ("name", "city", "note")), *((n, (f"p{n}", "Paris", "a, b")) for n in range(2, 40))]
    assert sheet_tables(named, header_first=True)[0].header == ("name", "city", "note")
    assert sheet_tables(named)[0].header is None  # a sheet has no such convention: a tie is no header
    unnamed = [(n, (f"p{n}", "Paris", "a, b")) for n in range(1, 40)]
    assert sheet_tables(unnamed, header_first=True)[0].header is None  # "Paris" over "Paris": a value
