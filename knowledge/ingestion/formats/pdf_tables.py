"""Tables in PDFs: found on the page, read cell by cell, and rendered one row per line with its column
headers (``Header: value; Header: value``, as sheet rows are), under the table's caption.

Two kinds of table are found, with pdfplumber (word positions and drawn lines from pdfminer):

- **Ruled tables**, whose cells are drawn as a grid: pdfplumber's own table finder reads them.
- **Rule tables**, drawn with horizontal rules only (a rule above, one under the header, one below:
  the usual table of a scientific paper), which the grid finder misses. Rules whose ends line up
  are one table's; the band above the first inner rule is the header; the columns are the gaps
  that no word of a body row crosses.

Only pages that draw three horizontal rules or more with their ends lined up are looked at: PDFium
finds them in a millisecond, while pdfminer's layout of a page costs two to four times pypdf's text
(docs/user-guide/collections-and-uploads.md, "Tables in PDFs"). A grid drawn only as outlined
cells, with no rule of its own, is not looked for. Pure: no Django.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# A horizontal rule: a drawn path at most this tall and at least this wide (points).
RULE_MAX_HEIGHT = 2.0
RULE_MIN_WIDTH = 40.0
MIN_PAGE_RULES = 3
# The rules of one table have their ends lined up within this many points.
RULE_ALIGNMENT = 3.0
# Letters closer than this share of their size are one word: some PDFs set words 2-3 points apart
# without a space character, which pdfplumber's fixed 3-point tolerance would run together.
WORD_GAP_RATIO = 0.15
# Words of one line further apart than this many points are in different cells.
CELL_GAP = 6.0
# Words whose tops are within this many points are on one line.
LINE_TOLERANCE = 3.0
# A caption ("Table 5: ...") sits within this many points above or below its table.
CAPTION_DISTANCE = 40.0
CAPTION = re.compile(r"^(?:Table|TABLE|Tab\.)\s*[0-9IVX]+\b")
# A "table" whose cells average more characters than this is text in a frame, not a table.
MAX_MEAN_CELL_CHARS = 80
# Rows of one label (titles) that may come before a grid's header.
MAX_TITLE_ROWS = 2
# At least this share of a table's rows have two filled cells or more.
MIN_FILLED_ROW_SHARE = 0.6


@dataclass(frozen=True)
class PdfTable:
    caption: str  # "Table 5: Results on the test set." or "" when the table has none
    rows: tuple[tuple[str, ...], ...]  # the header row first
    # The table's lines of text with whitespace removed: the page's own text drops these lines.
    lines: frozenset[str]


def pages_with_rules(data: bytes) -> set[int]:
    """The pages (1-based) that draw three horizontal rules or more with their ends lined up (a rule
    table's top, middle and bottom; a grid's rows): the only ones searched for tables."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        return {number for number in range(1, len(pdf) + 1) if _draws_aligned_rules(pdf[number - 1], pdfium)}
    finally:
        pdf.close()


def _draws_aligned_rules(page, pdfium) -> bool:
    # Rules counted by where their ends are, in cells of RULE_ALIGNMENT points; a rule's neighbours
    # are in its cell or the cells around it.
    ends: Counter[tuple[int, int]] = Counter()
    try:
        for drawn in page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_PATH]):
            left, bottom, right, top = drawn.get_bounds()
            if top - bottom <= RULE_MAX_HEIGHT and right - left >= RULE_MIN_WIDTH:
                ends[round(left / RULE_ALIGNMENT), round(right / RULE_ALIGNMENT)] += 1
    finally:
        page.close()
    return any(
        sum(ends[left + dl, right + dr] for dl in (-1, 0, 1) for dr in (-1, 0, 1)) >= MIN_PAGE_RULES
        for left, right in ends
    )


def page_tables(page) -> list[PdfTable]:
    """The tables of one pdfplumber page, top to bottom."""
    words = page.extract_words(x_tolerance_ratio=WORD_GAP_RATIO, keep_blank_chars=False)
    found = [table for table in _ruled_tables(page, words) if table]
    taken = [bbox for bbox, _, _ in found]
    for bbox, rows in _rule_tables(page, words):
        if not any(_overlaps(bbox, other) for other in taken):
            found.append((bbox, rows, ""))
            taken.append(bbox)
    found.sort(key=lambda item: item[0][1])
    captions = _captions([bbox for bbox, _, _ in found], words)
    return [
        PdfTable(caption=caption or title, rows=tuple(rows), lines=_line_keys(_inside(words, bbox)))
        for (bbox, rows, title), caption in zip(found, captions, strict=True)
    ]


# -- ruled tables (a grid) ------------------------------------------------------------------------


def _ruled_tables(page, words) -> Iterable[tuple[tuple, list[tuple[str, ...]], str] | None]:
    for table in page.find_tables():
        rows = [tuple(_cell(cell) for cell in row) for row in table.extract(x_tolerance_ratio=WORD_GAP_RATIO)]
        title, rows = _title_rows(rows)
        yield (table.bbox, rows, title) if _is_table(rows) else None


def _title_rows(rows: list[tuple[str, ...]]) -> tuple[str, list[tuple[str, ...]]]:
    """A grid's first rows may be titles across it ("Preferred Regimens"): the header is the first
    row of two different labels, within the first MAX_TITLE_ROWS + 1 rows. The titles, joined, name
    a table that has no caption."""
    for index, row in enumerate(rows[: MAX_TITLE_ROWS + 1]):
        if len({cell for cell in row if cell}) >= 2:
            titles = [" ".join(dict.fromkeys(cell for cell in title if cell)) for title in rows[:index]]
            return " - ".join(titles), rows[index:]
    return "", rows


def _cell(text: str | None) -> str:
    return " ".join((text or "").split())


# -- rule tables (horizontal rules only) ----------------------------------------------------------


def _rule_tables(page, words) -> Iterable[tuple[tuple, list[tuple[str, ...]]]]:
    sides = [e for e in page.edges if e["orientation"] == "v"]
    for rules in _aligned_rules(page.edges):
        for run in _runs_between_captions(rules, words):
            bbox = (run[0]["x0"], run[0]["top"], run[0]["x1"], run[-1]["bottom"])
            if _has_sides(bbox, sides):
                continue  # a box (of a diagram, or a grid the ruled finder has read)
            rows = _rule_table_rows(run, words)
            if rows and _is_table(rows):
                yield bbox, rows


def _has_sides(bbox: tuple, verticals: list[dict]) -> bool:
    """Whether vertical lines close the region on its left or right, as a box's sides do."""
    x0, top, x1, bottom = bbox
    height = bottom - top
    return any(
        min(abs(v["x0"] - x0), abs(v["x0"] - x1)) <= RULE_ALIGNMENT
        and min(v["bottom"], bottom) - max(v["top"], top) >= 0.5 * height
        for v in verticals
    )


def _aligned_rules(edges) -> list[list[dict]]:
    """Horizontal rules grouped by where their ends are, each group top to bottom."""
    groups: list[list[dict]] = []
    rules = [e for e in edges if e["orientation"] == "h" and e["x1"] - e["x0"] >= RULE_MIN_WIDTH]
    for rule in sorted(rules, key=lambda e: e["top"]):
        for group in groups:
            first = group[0]
            if (
                abs(first["x0"] - rule["x0"]) <= RULE_ALIGNMENT
                and abs(first["x1"] - rule["x1"]) <= RULE_ALIGNMENT
            ):
                if rule["top"] - group[-1]["top"] > LINE_TOLERANCE:  # a rule drawn twice is one
                    group.append(rule)
                break
        else:
            groups.append([rule])
    return [group for group in groups if len(group) >= 2]


def _runs_between_captions(rules: list[dict], words) -> Iterable[list[dict]]:
    """Split aligned rules where a caption lies between two of them: two tables set one under the
    other share their rules' ends, with the first one's caption between them."""
    run = [rules[0]]
    for rule in rules[1:]:
        band = _band_lines(words, run[-1], rule)
        if any(CAPTION.match(_text(line)) for line in band):
            if len(run) >= 2:
                yield run
            run = [rule]
        else:
            run.append(rule)
    if len(run) >= 2:
        yield run


def _rule_table_rows(rules: list[dict], words) -> list[tuple[str, ...]] | None:
    """Header from the band above the first inner rule (or the first line), body from the rest."""
    if len(rules) >= 3:
        header_lines = _band_lines(words, rules[0], rules[1])
        body_lines = [
            line for a, b in zip(rules[1:], rules[2:], strict=False) for line in _band_lines(words, a, b)
        ]
    else:
        lines = _band_lines(words, rules[0], rules[1])
        header_lines, body_lines = lines[:1], lines[1:]
    if not header_lines or len(body_lines) < 2:
        return None
    columns = _columns(word for line in body_lines for word in line)
    if len(columns) < 2:
        return None
    header = _header(header_lines, columns)
    return [header, *(_row(line, columns) for line in body_lines)]


def _band_lines(words, upper: dict, lower: dict) -> list[list[dict]]:
    """The lines of words between two rules, within their width."""
    inside = [
        w
        for w in words
        if w["top"] >= upper["bottom"] - 1
        and w["bottom"] <= lower["top"] + 1
        and w["x0"] >= upper["x0"] - RULE_ALIGNMENT
        and w["x1"] <= upper["x1"] + RULE_ALIGNMENT
    ]
    return _lines(inside)


def _lines(words) -> list[list[dict]]:
    lines: list[list[dict]] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        if lines and abs(word["top"] - lines[-1][0]["top"]) <= LINE_TOLERANCE:
            lines[-1].append(word)
        else:
            lines.append([word])
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def _columns(words: Iterable[dict]) -> list[tuple[float, float]]:
    """The column spans: the body's words' spans merged wherever less than CELL_GAP apart."""
    spans: list[list[float]] = []
    for word in sorted(words, key=lambda w: w["x0"]):
        if spans and word["x0"] - spans[-1][1] < CELL_GAP:
            spans[-1][1] = max(spans[-1][1], word["x1"])
        else:
            spans.append([word["x0"], word["x1"]])
    return [(a, b) for a, b in spans]


def _row(line: list[dict], columns: list[tuple[float, float]]) -> tuple[str, ...]:
    cells: list[list[str]] = [[] for _ in columns]
    for word in line:
        cells[_column_of(word, columns)].append(word["text"])
    return tuple(" ".join(cell) for cell in cells)


def _column_of(word: dict, columns: list[tuple[float, float]]) -> int:
    middle = (word["x0"] + word["x1"]) / 2
    return min(range(len(columns)), key=lambda i: _distance(middle, columns[i]))


def _distance(x: float, span: tuple[float, float]) -> float:
    return 0.0 if span[0] <= x <= span[1] else min(abs(x - span[0]), abs(x - span[1]))


def _header(lines: list[list[dict]], columns: list[tuple[float, float]]) -> tuple[str, ...]:
    """Each column's label: the header phrases over it, top line first ("RealScholarQuery Recall").

    A phrase (words less than CELL_GAP apart) labels every column it overlaps, or the nearest one."""
    labels: list[list[str]] = [[] for _ in columns]
    for line in lines:
        for phrase in _phrases(line):
            x0, x1 = phrase[0]["x0"], phrase[-1]["x1"]
            text = _text(phrase)
            under = [i for i, (a, b) in enumerate(columns) if a < x1 and x0 < b]
            for index in under or [_column_of({"x0": x0, "x1": x1}, columns)]:
                labels[index].append(text)
    return tuple(" ".join(label) for label in labels)


def _phrases(line: list[dict]) -> list[list[dict]]:
    phrases: list[list[dict]] = []
    for word in line:
        if phrases and word["x0"] - phrases[-1][-1]["x1"] < CELL_GAP:
            phrases[-1].append(word)
        else:
            phrases.append([word])
    return phrases


# -- shared --------------------------------------------------------------------------------------


def _is_table(rows: Sequence[Sequence[str]]) -> bool:
    """A header of two different labels or more; most rows (two at least) with two filled cells or
    more; and cells short enough to be cells.

    Boxes and labels of a diagram come out as rows of one filled cell, of letters, or under one
    title repeated over the columns."""
    if len({cell for cell in rows[0] if cell}) < 2:
        return False
    filled = [row for row in rows if sum(1 for cell in row if cell) >= 2]
    if len(filled) < 2 or len(filled) < MIN_FILLED_ROW_SHARE * len(rows):
        return False
    cells = [cell for row in rows for cell in row if cell]
    return sum(map(len, cells)) / len(cells) <= MAX_MEAN_CELL_CHARS


def _captions(bboxes: list[tuple], words) -> list[str]:
    """Each table's "Table N ..." line (its first sentence), or "".

    A document puts its captions on one side of its tables, and the caption between two tables is
    nearer the wrong one as often as not: the side that captions more of the page's tables is used,
    the other only for a table that has none on that side."""
    below = [_caption_line(bbox, words, below=True) for bbox in bboxes]
    above = [_caption_line(bbox, words, below=False) for bbox in bboxes]
    first, second = (below, above) if sum(map(bool, below)) >= sum(map(bool, above)) else (above, below)
    return [one or other for one, other in zip(first, second, strict=True)]


def _caption_line(bbox: tuple, words, *, below: bool) -> str:
    x0, top, x1, bottom = bbox
    near = [
        w
        for w in words
        if w["x0"] >= x0 - CAPTION_DISTANCE
        and w["x1"] <= x1 + CAPTION_DISTANCE
        and (
            bottom <= w["top"] <= bottom + CAPTION_DISTANCE
            if below
            else top - CAPTION_DISTANCE <= w["bottom"] <= top
        )
    ]
    lines = _lines(near) if below else list(reversed(_lines(near)))
    for line in lines:
        text = _text(line)
        if CAPTION.match(text):
            return _first_sentence(text)
    return ""


def _first_sentence(text: str) -> str:
    label = CAPTION.match(text).end()
    end = re.search(r"[.!?](?=\s)", text[label + 2 :])
    return text[: label + 2 + end.end()] if end else text


def _text(line: list[dict]) -> str:
    return " ".join(w["text"] for w in line)


def _inside(words, bbox: tuple) -> list[dict]:
    x0, top, x1, bottom = bbox
    return [
        w
        for w in words
        if w["x0"] >= x0 - 1 and w["x1"] <= x1 + 1 and w["top"] >= top - 1 and w["bottom"] <= bottom + 1
    ]


def _line_keys(words) -> frozenset[str]:
    return frozenset(line_key(_text(line)) for line in _lines(words))


def line_key(text: str) -> str:
    """A line of text without its whitespace: pypdf and pdfplumber space the same line differently."""
    return "".join(text.split())


def _overlaps(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
