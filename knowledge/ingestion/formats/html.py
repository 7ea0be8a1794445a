"""HTML: the page's main content (trafilatura decides what is content), under the page's own headings."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from knowledge.ingestion.formats.common import HeadingSections, collapse, filename_stem, render_rows
from knowledge.ingestion.limits import TextBudget, html_elements_check
from knowledge.ingestion.types import Section

_HTML_DROP = ("script", "style", "nav", "aside", "noscript", "form", "template", "svg", "iframe")
# MediaWiki "[edit]" links sit inside or next to every heading of the most
# commonly saved article pages and would end up in heading source_refs; its
# reference lists and "[1]" markers are citations, not content, yet the
# main-content extractor keeps them (Obama's page: 110,000 characters of them,
# outranking the article for questions about dates and sums).
_HTML_DROP_CLASSES = ("mw-editsection", "references", "reference")
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_BLOCKS = frozenset(
    "address article blockquote body caption dd details dialog div dl dt fieldset figcaption "
    "figure footer header hr li main ol p pre section summary ul".split()
)
_SECTIONING = ("article", "main", "section")


def extract_html(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Sections by h1-h6, keeping only the blocks trafilatura counts as the page's main content.

    Headings always come from the page itself, so references stay the page's
    own ``heading=TEXT``; trafilatura only decides which paragraphs, lists
    and tables are content (it leaves out language-link lists, "Edit links",
    navigation, captions, hatnotes and other boilerplate). A heading left
    with no content yields no section.
    """
    html_elements_check(data, budget.limits)
    soup = _parse_html(data)
    title_tag = soup.find("title")
    title = collapse(title_tag.get_text()) if title_tag else ""
    _drop_html_chrome(soup)
    is_content = _html_main_content_test(str(soup))
    # <main> holds the page's own content by definition; skip links, site
    # banners and sidebars outside it are chrome even when not marked up as such.
    root = soup.find("main") or soup.find(attrs={"role": "main"}) or soup.body or soup
    builder = HeadingSections(title or filename_stem(filename), budget)
    walker = _HtmlWalker(builder, is_content)
    walker.walk(root)
    walker.end_paragraph()
    return builder.finish()


# A block shorter than this (in non-space characters) is main content only
# if trafilatura kept an element with exactly its text: short strings such as
# "Canada" or "Edit links" occur by chance inside longer content.
_HTML_SHORT_BLOCK_CHARS = 40


def _html_main_content_test(html: str) -> Callable[[str], bool]:
    """A test telling whether a block's text is part of the main content trafilatura extracts.

    When trafilatura finds no main content (a page under its minimum size,
    one that is nothing but a table), every block counts.
    """
    import trafilatura

    extracted = trafilatura.extract(
        html,
        output_format="html",
        include_tables=True,
        include_formatting=True,
        include_comments=False,
        include_images=False,
        include_links=False,
        favor_recall=True,
    )
    content = _parse_html(extracted.encode()).body if extracted else None
    if content is None or not content.get_text(strip=True):
        return lambda text: True
    whole = _squeeze(content.get_text())
    elements = {_squeeze(tag.get_text()) for tag in content.find_all(True)}

    def is_content(text: str) -> bool:
        squeezed = _squeeze(text)
        if len(squeezed) < _HTML_SHORT_BLOCK_CHARS:
            return squeezed in elements
        return squeezed in whole

    return is_content


def _squeeze(text: str) -> str:
    """Text without whitespace: trafilatura and the walker space inline elements differently."""
    return re.sub(r"\s+", "", text)


def _parse_html(data: bytes):
    """Bytes go to BeautifulSoup so it can honour ``<meta charset>``."""
    from bs4 import BeautifulSoup, FeatureNotFound

    try:
        return BeautifulSoup(data, "lxml")
    except FeatureNotFound:  # lxml missing: the stdlib parser is slower but always there
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

    def __init__(self, builder: HeadingSections, is_content: Callable[[str], bool]) -> None:
        self.builder = builder
        self.is_content = is_content
        self.in_caption = 0
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
            if self._table_is_content(tag):
                self.builder.add(render_rows(_html_table_rows(tag), header_needs_two_cells=True))
        elif name == "br":
            self.inline.append("\n")
        elif name in _HTML_BLOCKS:
            self.end_paragraph()
            self.in_pre += name == "pre"
            self.in_caption += name == "figcaption"
            self.walk(tag)
            self.in_pre -= name == "pre"
            self.end_paragraph()
            self.in_caption -= name == "figcaption"
        else:
            self.walk(tag)

    def _table_is_content(self, table) -> bool:
        """Most of its cells are content (trafilatura drops a cell's image caption or hidden date)."""
        cells = [cell.get_text() for cell in table.find_all(("td", "th")) if cell.get_text(strip=True)]
        return sum(map(self.is_content, cells)) * 2 >= len(cells)

    def end_paragraph(self) -> None:
        text = "".join(self.inline)
        # trafilatura drops figures with their captions, but a caption on the
        # page's own figure states facts ("Obama won 332–206") found nowhere else.
        if text.strip() and (self.in_caption or self.is_content(text)):
            self.builder.add(text)
        self.inline = []


def _html_table_rows(table) -> Iterator[list[str]]:
    """Rows of this table only (nested tables are flattened into their cell's text)."""
    for row in table.find_all("tr"):
        if row.find_parent("table") is table:
            yield [cell.get_text(" ") for cell in row.find_all(("td", "th"), recursive=False)]
