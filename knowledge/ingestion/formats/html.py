"""HTML: the page's text without its chrome (navigation, scripts...), under its headings."""

from __future__ import annotations

import re
from collections.abc import Iterator

from knowledge.ingestion.formats.common import HeadingSections, collapse, filename_stem, render_rows
from knowledge.ingestion.limits import TextBudget, html_elements_check
from knowledge.ingestion.types import Section

_HTML_DROP = ("script", "style", "nav", "aside", "noscript", "form", "template", "svg", "iframe")
# MediaWiki "[edit]" links sit inside or next to every heading of the most
# commonly saved article pages and would end up in heading source_refs.
_HTML_DROP_CLASSES = ("mw-editsection",)
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_BLOCKS = frozenset(
    "address article blockquote body caption dd details dialog div dl dt fieldset figcaption "
    "figure footer header hr li main ol p pre section summary ul".split()
)
_SECTIONING = ("article", "main", "section")


def extract_html(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Sections by h1-h6 after removing page chrome (scripts, menus, page header/footer)."""
    html_elements_check(data, budget.limits)
    soup = _parse_html(data)
    title_tag = soup.find("title")
    title = collapse(title_tag.get_text()) if title_tag else ""
    _drop_html_chrome(soup)
    # <main> holds the page's own content by definition; skip links, site
    # banners and sidebars outside it are chrome even when not marked up as such.
    root = soup.find("main") or soup.find(attrs={"role": "main"}) or soup.body or soup
    builder = HeadingSections(title or filename_stem(filename), budget)
    walker = _HtmlWalker(builder)
    walker.walk(root)
    walker.end_paragraph()
    return builder.finish()


def _parse_html(data: bytes):
    """Bytes go to BeautifulSoup so it can honour ``<meta charset>``."""
    from bs4 import BeautifulSoup

    try:
        return BeautifulSoup(data, "lxml")
    except Exception:  # lxml missing: the stdlib parser is slower but always there
        return BeautifulSoup(data, "html.parser")


def _drop_html_chrome(soup) -> None:
    """Remove non-content elements: scripts, menus, forms, hidden elements.

    ``header``/``footer`` are dropped only at page level: inside ``main``,
    ``article`` or ``section`` they hold the content's own title (Wikipedia
    and MDN put the page ``<h1>`` there).
    """
    doomed = [
        *soup.find_all(_HTML_DROP),
        *soup.find_all(attrs={"role": "navigation"}),
        *soup.find_all(attrs={"aria-hidden": "true"}),  # invisible to readers too
        *soup.find_all(hidden=True),
        *soup.find_all(class_=_HTML_DROP_CLASSES),
    ]
    for tag in soup.find_all(("header", "footer")):
        if tag.find_parent(_SECTIONING) is None:
            doomed.append(tag)
    for tag in doomed:
        if not tag.decomposed:
            tag.decompose()


class _HtmlWalker:
    """Walk the DOM in order, turning block elements into paragraphs.

    Inline text accumulates until a block boundary; headings start a new
    section; tables are rendered row-wise like spreadsheets. Newlines in the
    source are layout, not content, except inside ``<pre>``; ``<br>`` breaks
    a line.
    """

    def __init__(self, builder: HeadingSections) -> None:
        self.builder = builder
        self.inline: list[str] = []
        self.in_pre = 0

    def walk(self, node) -> None:
        from bs4 import NavigableString, Tag

        for child in node.children:
            if isinstance(child, Tag):
                self.element(child)
            elif type(child) is NavigableString:  # not Comment, Doctype, CData...
                text = str(child)
                self.inline.append(text if self.in_pre else re.sub(r"[\r\n]+", " ", text))

    def element(self, tag) -> None:
        name = tag.name
        if name in _HTML_HEADINGS:
            self.end_paragraph()
            self.builder.heading(_HTML_HEADINGS[name], tag.get_text(" "))
        elif name == "table":
            self.end_paragraph()
            self.builder.add(render_rows(_html_table_rows(tag), header_needs_two_cells=True))
        elif name == "br":
            self.inline.append("\n")
        elif name in _HTML_BLOCKS:
            self.end_paragraph()
            self.in_pre += name == "pre"
            self.walk(tag)
            self.in_pre -= name == "pre"
            self.end_paragraph()
        else:
            self.walk(tag)

    def end_paragraph(self) -> None:
        self.builder.add("".join(self.inline))
        self.inline = []


def _html_table_rows(table) -> Iterator[list[str]]:
    """Rows of this table only (nested tables are flattened into their cell's text)."""
    for row in table.find_all("tr"):
        if row.find_parent("table") is table:
            yield [cell.get_text(" ") for cell in row.find_all(("td", "th"), recursive=False)]
