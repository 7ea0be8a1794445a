"""The pages' third pass, in a real headless Chromium at 1280x900 and 390x844: a first visit that
explains itself, and answers as people read them (closest matches as links, Markdown as text)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from knowledge.services.collections import collection_create
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import SIZES, ask, each_size, upload
from tests.conftest import CORPUS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]
chromium = test_pages_ux.chromium  # one Chromium for the module

# The gravity hill article names no refund: the documents do not answer this, and say so.
UNCOVERED = "What is the refund policy for gravity hill tickets bought online?"


@pytest.fixture
def hills(alice):
    collection = collection_create(name="Hills", owner=alice)
    upload(collection, CORPUS / "text" / "gravity_hill.md")
    return collection


def visible_without_scrolling(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and 0 <= box["y"] and box["y"] + box["height"] <= page.viewport_size["height"]


def test_the_log_in_page_says_what_the_product_does_and_offers_an_account(chromium, live_server):
    for size in SIZES.values():
        page = chromium.new_context(viewport=size).new_page()
        try:
            page.goto(f"{live_server.url}/accounts/login/")
            assert "answers questions from your own documents" in page.locator("#product-intro").inner_text()
            assert visible_without_scrolling(page, "#product-intro")
            assert visible_without_scrolling(page, "#signup-link")
            page.click("#signup-link")
            page.wait_for_url("**/accounts/signup/")
        finally:
            page.context.close()


def test_the_chat_page_names_what_it_searches_and_titles_a_conversation_from_its_question(
    chromium, live_server, hills, no_llm
):
    def check(page, size):
        page.goto(f"{live_server.url}/chat/")
        assert page.locator("#scope-words").inner_text() == "Searching: Hills"
        assert not page.locator("select[name=profile]").is_visible()  # an advanced choice, folded away
        page.select_option("select[name=collections]", [])
        assert page.locator("#scope-words").inner_text().startswith("Nothing chosen yet")
        page.select_option("select[name=collections]", [str(hills.pk)])
        assert page.locator("#chat-title").inner_text() == "New conversation"
        ask(page)
        expect(page.locator("#chat-title")).to_have_text(re.compile("^Why do cars seem"))
        assert page.title().startswith("Why do cars seem")

    each_size(chromium, live_server.url, "alice", check)


def test_the_collection_search_box_is_a_full_width_field(chromium, live_server, hills):
    def check(page, size):
        page.goto(f"{live_server.url}/collections/{hills.pk}/")
        box = page.locator("#search-q").bounding_box()
        bar = page.locator("#search-q").locator("xpath=..").bounding_box()
        assert box["width"] > 0.5 * bar["width"], (size, box, bar)
        assert page.locator("#search-q").evaluate("e => getComputedStyle(e).borderStyle") == "solid"

    each_size(chromium, live_server.url, "alice", check)


def test_closest_matches_are_links_that_open_beside_the_answer(chromium, live_server, hills, no_llm):
    def check(page, size):
        page.goto(f"{live_server.url}/chat/")
        ask(page, UNCOVERED)
        page.wait_for_selector("#turns .turn .turn-actions", timeout=120_000)
        match = page.locator(".answer a.closest-match").first
        assert match.inner_text().startswith("gravity_hill.md, ")
        match.click()
        page.wait_for_selector("#source-panel:not([hidden]) #source-panel-body .chunk")
        assert "gravity_hill.md" in page.locator("#source-panel-place").inner_text()
        page.reload()  # the saved page links them too
        assert page.locator(".answer a.closest-match").count() >= 1

    each_size(chromium, live_server.url, "alice", check)


def test_quotes_of_a_markdown_document_show_no_markdown_syntax(chromium, live_server, alice, no_llm):
    readme = b"# Setup\n\nRun `manage.py migrate` before the **first** start of the server.\n"
    collection = collection_create(name="Guide", owner=alice)
    upload(collection, CORPUS / "text" / "setup.md", data=readme)

    def check(page, size):
        page.goto(f"{live_server.url}/chat/?collection={collection.pk}")
        ask(page, "What do I run before the first start of the server?")
        page.wait_for_selector("#turns .turn .turn-actions", timeout=120_000)
        answer = page.locator("#turns .turn .answer").first
        assert answer.locator("code", has_text="manage.py migrate").count() == 1
        assert "`" not in answer.inner_text() and "**" not in answer.inner_text()

    each_size(chromium, live_server.url, "alice", check)


def test_a_new_collection_page_offers_uploads_first_and_keeps_every_status_current(
    chromium, live_server, alice, no_llm
):
    def check(page, size):
        collection = collection_create(name=f"Fresh {size}", owner=alice)
        page.goto(f"{live_server.url}/collections/{collection.pk}/")
        assert visible_without_scrolling(page, "#dropzone")
        # Expert tools are named sections, closed until opened; none comes before the uploads.
        for section in ("#collection-sources", "#teams", "#releases"):
            assert page.get_attribute(section, "open") is None, section
            assert page.locator(section).bounding_box()["y"] > page.locator("#dropzone").bounding_box()["y"]
        assert not page.is_visible("#add-source-form") and not page.is_visible("#release-list")
        assert page.locator("#releases > summary").inner_text().endswith("0 passages")
        page.set_input_files(
            "#file-input",
            {
                "name": "gravity_hill.md",
                "mimeType": "text/markdown",
                "buffer": (CORPUS / "text" / "gravity_hill.md").read_bytes(),
            },
        )
        # The upload row says what is happening from the first moment, never a blank status.
        assert page.locator("#uploads li .state").first.inner_text().strip() != ""
        page.wait_for_selector("#uploads li .state:has-text('Ready')", timeout=120_000)
        # The release now holds the new passages, without a reload.
        expect(page.locator("#releases [data-role=serving-chunks]")).not_to_have_text("0")

    each_size(chromium, live_server.url, "alice", check)
