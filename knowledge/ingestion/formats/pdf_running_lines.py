"""A PDF's running heads and feet: lines printed at the top or bottom of page after page.

A form's "CUI (when filled in)", a manual's "National Hydro Network, Data Model – Edition 1.0" or a
"Page 3 of 4" footer is not content: it must not become a document's summary or an answer's quote.
A line is running when it is among the first or last ``EDGE`` non-empty lines of its page and a line
like it is at an edge of most pages around it (``WINDOW`` pages on each side; at least ``MIN_PAGES``
and ``SHARE`` of the window). Lines are alike when their keys (case, digits and punctuation folded)
are equal or nearly so, which also catches OCR's misreadings of the same head. A bare page number
("7", "- 7 -", "Page 7 of 40", "iv") is running only when it rises with the page: a number at a
page's edge that does not (a table's last value) is content; likewise alike lines whose numbers
differ without rising with the page (a bibliography's links) are not the same line.

``RunningLines`` decides a page once the pages after it in its window are read, so the pipeline
still embeds the first pages while the next ones are read.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import deque
from dataclasses import dataclass, field
from difflib import SequenceMatcher

EDGE = 3  # non-empty lines looked at at the top and at the bottom of each page
WINDOW = 4  # pages on each side of a page that vote on its edge lines
MIN_PAGES = 3  # a line on fewer pages than this is never running (two-page documents keep theirs)
SHARE = 0.6  # of the window's pages
ALIKE = 0.85  # SequenceMatcher ratio of two keys that are the same head read differently
MAX_RUNNING_CHARS = 120  # a longer line is a paragraph, even when it repeats

_ROMAN = re.compile(r"\b[ivxlcdm]{1,7}\b")
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?([0-9]+|[ivxlcdm]{1,7})(?:\s*(?:of|/)\s*[0-9]+)?$")
_NUMBERS = re.compile(r"\d+|\b[ivxlcdm]{1,7}\b")
MAX_NUMBERS = 8
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


@dataclass
class _Page:
    index: int  # from 0, in reading order
    lines: list[str]  # the page's text, split at line breaks (blank lines kept)
    extra: object  # what the caller keeps with the page (its number, OCR metadata, tables)
    edges: list[int] = field(default_factory=list)  # indexes into lines of the edge lines
    keys: list[str] = field(default_factory=list)  # their keys
    numbers: list[int | None] = field(default_factory=list)  # their page-number values
    digits: list[tuple[int, ...]] = field(default_factory=list)  # the numbers written in them


class RunningLines:
    """Feed pages in order with ``feed``; each call returns the pages now decided, as (text without
    its running lines, the lines removed, extra). ``finish`` returns the rest."""

    def __init__(self) -> None:
        self._pages: deque[_Page] = deque()  # the undecided pages and the window behind them
        self._next = 0  # index of the next page to decide
        self._read = 0

    def feed(self, text: str, extra: object = None) -> list[tuple[str, list[str], object]]:
        self._pages.append(_read_page(self._read, text, extra))
        self._read += 1
        decided = []
        while self._next + WINDOW < self._read:  # the page's window ahead is read
            decided.append(self._decide(total=None))
        return decided

    def finish(self) -> list[tuple[str, list[str], object]]:
        return [self._decide(total=self._read) for _ in range(self._read - self._next)]

    def _decide(self, *, total: int | None) -> tuple[str, list[str], object]:
        index = self._next
        page = self._page(index)
        last = index + WINDOW if total is None else min(total - 1, index + WINDOW)
        window = [self._page(i) for i in range(max(0, index - WINDOW), last + 1)]
        need = max(MIN_PAGES, math.ceil(SHARE * len(window)))
        dropped = {line for position, line in enumerate(page.edges) if _votes(page, position, window) >= need}
        self._next += 1
        while self._pages and self._pages[0].index < self._next - WINDOW:
            self._pages.popleft()  # out of every later page's window
        kept = [line for i, line in enumerate(page.lines) if i not in dropped]
        return "\n".join(kept), [page.lines[i] for i in sorted(dropped)], page.extra

    def _page(self, index: int) -> _Page:
        return self._pages[index - self._pages[0].index]


def _read_page(index: int, text: str, extra: object) -> _Page:
    page = _Page(index, text.split("\n"), extra)
    filled = [i for i, line in enumerate(page.lines) if line.strip()]
    page.edges = sorted(set(filled[:EDGE] + filled[-EDGE:]))
    page.keys = [_key(page.lines[i]) for i in page.edges]
    page.numbers = [_page_number(page.lines[i]) for i in page.edges]
    page.digits = [_numbers_in(page.lines[i]) for i in page.edges]
    return page


def _votes(page: _Page, position: int, window: list[_Page]) -> int:
    """How many pages of the window (this one included) have a line like this edge line at an edge."""
    key, number = page.keys[position], page.numbers[position]
    if not key or len(key) > MAX_RUNNING_CHARS:
        return 0
    if number is not None:  # a page number: the same offset from the page index on the other pages
        offset = number - page.index
        return sum(1 for other in window if offset + other.index in other.numbers)
    digits = page.digits[position]
    return sum(
        1
        for other in window
        if any(
            _alike(key, theirs) and _same_numbers(digits, page.index, their_digits, other.index)
            for theirs, their_digits in zip(other.keys, other.digits, strict=True)
        )
    )


def _key(line: str) -> str:
    folded = unicodedata.normalize("NFKC", line).casefold()
    folded = _ROMAN.sub("#", re.sub(r"\d+", "#", folded))
    return " ".join(re.sub(r"[^\w#]+", " ", folded).split())


def _alike(a: str, b: str) -> bool:
    if a == b:
        return True
    if not a or not b or abs(len(a) - len(b)) > 0.3 * max(len(a), len(b)):
        return False
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.quick_ratio() >= ALIKE and matcher.ratio() >= ALIKE


def _numbers_in(line: str) -> tuple[int, ...]:
    """The numbers the key folds away, in order: digit runs and standalone roman numerals."""
    folded = unicodedata.normalize("NFKC", line).casefold()
    found = _NUMBERS.findall(folded)[:MAX_NUMBERS]
    return tuple(int(token) if token.isdigit() else _roman(token) for token in found)


def _same_numbers(ours: tuple[int, ...], page: int, theirs: tuple[int, ...], other: int) -> bool:
    """Two alike lines hold the same numbers, or numbers that rise with the page ("GeoBase® v" on one
    page, "GeoBase® 6" on the next; a scan that skips a page skips a number too). Numbers that differ
    otherwise (a bibliography's PubMed links) make them different lines."""
    if len(ours) != len(theirs):
        return False
    apart = other - page
    return all(a == b or _rises(b - a, apart) for a, b in zip(ours, theirs, strict=True))


def _rises(difference: int, pages_apart: int) -> bool:
    if pages_apart == 0:
        return False
    steps = difference if pages_apart > 0 else -difference
    return 0 < steps <= 2 * abs(pages_apart) + 2


def _page_number(line: str) -> int | None:
    """The value of a line that is only a page number ("7", "- 7 -", "Page 7 of 40", "iv"), else None."""
    words = " ".join(re.sub(r"[^\w]+", " ", line.casefold()).split())
    found = _PAGE_NUMBER.match(words)
    if not found:
        return None
    value = found.group(1)
    return int(value) if value.isdigit() else _roman(value)


def _roman(numeral: str) -> int:
    total = 0
    for this, following in zip(numeral, numeral[1:] + " ", strict=True):
        value = _ROMAN_VALUES[this]
        total += -value if _ROMAN_VALUES.get(following, 0) > value else value
    return total
