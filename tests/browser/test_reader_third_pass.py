"""The reader opens at what was cited, at 1280x900 and 390x844: the quoted sentence of page 4 of a PDF
in view in the text and on the page, row 12 of a sheet in view in its grid, without scrolling; a page
seen again shows at once (no "Loading")."""

from __future__ import annotations

import io
import re

import openpyxl
import pytest

from knowledge.models import Chunk, Document
from knowledge.services.collections import collection_create
from tests.browser import test_pages_ux, test_pdf_citations
from tests.browser.test_pages_ux import SIZES, signed_in, upload
from tests.conftest import CORPUS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
chromium = test_pages_ux.chromium  # one Chromium for the module
pasa = test_pdf_citations.pasa  # pasa.pdf, ready

# Every status the PDF viewer shows, as it shows it.
STATUS_LOG = """
window.statusLog = [];
new MutationObserver(() => window.statusLog.push(document.getElementById('pdf-status').textContent))
  .observe(document.getElementById('pdf-status'), {childList: true, characterData: true, subtree: true});
"""


def fully_visible(page, selector: str, within: str | None = None) -> bool:
    """The element's box lies in the viewport (and in ``within``'s visible box, when given)."""
    box = page.locator(selector).first.bounding_box()
    if box is None:
        return False
    size = page.viewport_size
    inside = 0 <= box["y"] and box["y"] + box["height"] <= size["height"] and 0 <= box["x"] <= size["width"]
    if within is None:
        return inside
    frame = page.locator(within).first.bounding_box()
    return inside and frame["y"] <= box["y"] and box["y"] + box["height"] <= frame["y"] + frame["height"]


def first_sentence(text: str) -> tuple[int, int]:
    found = re.search(r"[A-Z][^.!?\n]{40,200}[.!?]", text)
    assert found, text[:300]
    return found.span()


def samples_workbook() -> bytes:
    """Two tables on one sheet: 39 samples under a header (rows 2-40), then a legend without one
    (rows 42-43)."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Samples"
    sheet.append(["Case", "Tissue", "Stain intensity"])
    for number in range(2, 41):
        sheet.append([f"T-{number:02d}", "liver" if number % 2 else "kidney", number % 4])
    sheet.append([])
    sheet.append(["+", "very light"])
    sheet.append(["++", "light"])
    data = io.BytesIO()
    book.save(data)
    return data.getvalue()


@pytest.fixture
def workbook(alice):
    collection = collection_create(name="Lab", owner=alice)
    document = upload(collection, CORPUS / "office" / "samples.xlsx", data=samples_workbook())
    assert document.status == Document.Status.READY, document.error
    return document


def test_a_pdf_citation_on_page_4_opens_with_its_sentence_in_view_in_the_text_and_on_the_page(
    chromium, live_server, pasa
):
    chunk = Chunk.objects.filter(document=pasa, page=4).order_by("index").first()
    start, end = first_sentence(chunk.content)
    url = f"{live_server.url}/documents/{pasa.pk}/view/?chunk={chunk.pk}&quote={start}-{end}#page=4"
    for name, size in SIZES.items():
        page = signed_in(chromium, live_server.url, "alice", size)
        try:
            page.goto(url)
            page.evaluate(STATUS_LOG)
            page.wait_for_selector("#pdf-view[data-highlight=quote]", timeout=60_000)
            assert fully_visible(page, "#cited mark.quote", within="#passage"), name
            assert fully_visible(page, "#pdf-page .pdf-mark.quote", within="#pdf-frame"), name
            # Away and back: the page seen before shows at once.
            page.click("#pdf-next")
            page.wait_for_selector("#pdf-page-label:text-is('Page 5 of 15')")
            page.evaluate("window.statusLog = []")
            page.click("#pdf-previous")
            page.wait_for_selector("#pdf-view[data-highlight=quote]")
            assert not any("Loading" in status for status in page.evaluate("window.statusLog")), name
            page.screenshot(path=f"tests/artifacts/reader-pdf-page-4-{name}.png")
        finally:
            page.context.close()


def test_a_sheet_citation_of_row_12_opens_with_the_row_in_view_in_its_grid(chromium, live_server, workbook):
    chunk = next(
        c
        for c in Chunk.objects.filter(document=workbook).order_by("index")
        if any(row[0] == 12 for row in (c.metadata or {}).get("cells", []))
    )
    offset = next(row[2] for row in chunk.metadata["cells"] if row[0] == 12)
    line_end = chunk.content.find("\n", offset)
    line_end = len(chunk.content) if line_end < 0 else line_end
    view = f"{live_server.url}/documents/{workbook.pk}/view/"
    url = f"{view}?chunk={chunk.pk}&quote={offset}-{line_end}#sheet=Samples"
    for name, size in SIZES.items():
        page = signed_in(chromium, live_server.url, "alice", size)
        try:
            page.goto(url)
            page.wait_for_load_state("load")
            assert page.locator("table.grid tr.quoted").get_attribute("data-row") == "12"
            assert fully_visible(page, "table.grid tr.quoted", within=".grid-frame"), name
            assert page.locator("table.grid").first.locator("thead th").all_text_contents()[
                1:
            ] == [  # as written
                "Case",
                "Tissue",
                "Stain intensity",
            ]
            # The legend is a grid of its own, its columns named by letter: it has no header.
            assert page.locator("table.grid").count() == 2
            legend = page.locator("table.grid").nth(1)
            assert legend.locator("thead th").all_text_contents()[1:] == ["A", "B"]
            assert legend.locator("tbody tr").first.get_attribute("data-row") == "42"
            page.screenshot(path=f"tests/artifacts/reader-sheet-row-12-{name}.png")
        finally:
            page.context.close()
