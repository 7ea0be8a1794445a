"""Screenshots of what the pages' third pass changed, at 1280x900 and 390x844: the log-in page, a new
collection, the chat before and after a question, a refusal with its closest matches, and the reader
opened at a citation on page 4 of a PDF and on row 12 of a sheet.

They go to tests/artifacts/third-pass/<phase>/ (UI_ARTIFACTS_PHASE, default "after"); the same test
run on an older checkout with UI_ARTIFACTS_PHASE=before gives the pictures to compare with. The
comparison is kept in docs/screenshots/third-pass/. The behaviours shown are asserted by
test_pages_third_pass and test_reader_third_pass; this test checks only that each picture was taken.
"""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from knowledge.models import Chunk, Document
from knowledge.services.collections import collection_create
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import SIZES, ask, signed_in, upload
from tests.browser.test_reader_third_pass import samples_workbook
from tests.conftest import CORPUS, REPO_ROOT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]
chromium = test_pages_ux.chromium

PHASE = os.environ.get("UI_ARTIFACTS_PHASE", "after")
ARTIFACTS = REPO_ROOT / "tests" / "artifacts" / "third-pass" / PHASE
UNCOVERED = "What is the refund policy for gravity hill tickets bought online?"


@pytest.fixture
def shelf(alice):
    hills = collection_create(name="Hills", owner=alice)
    upload(hills, CORPUS / "text" / "gravity_hill.md")
    papers = collection_create(name="Papers", owner=alice)
    pdf = upload(papers, CORPUS / "pdf" / "pasa.pdf")
    sheet = upload(papers, CORPUS / "office" / "samples.xlsx", data=samples_workbook())
    assert pdf.status == sheet.status == Document.Status.READY
    return {"hills": hills, "pdf": pdf, "sheet": sheet}


def reader_urls(shelf) -> dict[str, str]:
    pdf_chunk = Chunk.objects.filter(document=shelf["pdf"], page=4).order_by("index").first()
    row = next(
        c for c in Chunk.objects.filter(document=shelf["sheet"]).order_by("index") if "T-12" in c.content
    )
    start = row.content.index("T-12")
    line_start = row.content.rfind("\n", 0, start) + 1
    line_end = row.content.find("\n", start)
    line_end = len(row.content) if line_end < 0 else line_end
    return {
        "reader-pdf-page-4": f"/documents/{shelf['pdf'].pk}/view/?chunk={pdf_chunk.pk}#page=4",
        "reader-sheet-row-12": (
            f"/documents/{shelf['sheet'].pk}/view/?chunk={row.pk}&quote={line_start}-{line_end}#sheet=Samples"
        ),
    }


def shoot(page, name: str, size: str, full_page: bool = False) -> None:
    page.wait_for_load_state("networkidle")
    target = ARTIFACTS / f"{name}-{size}.png"
    page.screenshot(path=str(target), full_page=full_page)
    assert target.stat().st_size > 5_000, target


def test_screenshots_of_the_third_pass(chromium, live_server, alice, shelf, no_llm):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base = live_server.url
    for size, viewport in SIZES.items():
        visitor = chromium.new_context(viewport=viewport).new_page()
        visitor.goto(f"{base}/accounts/login/")
        shoot(visitor, "login", size)
        visitor.context.close()

        page = signed_in(chromium, base, "alice", viewport)
        fresh = collection_create(name=f"New collection {size}", owner=alice)
        page.goto(f"{base}/collections/{fresh.pk}/")
        shoot(page, "new-collection", size, full_page=True)
        page.goto(f"{base}/chat/?collection={shelf['hills'].pk}")
        shoot(page, "chat-new", size)
        ask(page)
        page.wait_for_selector("#turns .turn .turn-actions", timeout=120_000)
        shoot(page, "chat-answered", size)
        page.goto(f"{base}/chat/?collection={shelf['hills'].pk}")
        ask(page, UNCOVERED)
        page.wait_for_selector("#turns .turn .turn-actions", timeout=120_000)
        shoot(page, "chat-refusal", size)
        for name, path in reader_urls(shelf).items():
            page.goto(base + path)
            if "pdf" in name:  # the page drawn, whatever the viewer says while it draws
                expect(page.locator("#pdf-status")).not_to_have_text(re.compile("^Loading"), timeout=60_000)
            shoot(page, name, size)
        page.context.close()
