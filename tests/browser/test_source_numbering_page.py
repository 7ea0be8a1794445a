"""The chat page in a real headless Chromium: the answer's [Source N] is the N-th passage listed beside
it, while the answer is shown and after a reload, also when the extracted answer reads a page on into
a passage retrieval did not number (tests/chat/test_source_numbering.py covers the API and MCP)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from knowledge.models import Document
from knowledge.services.collections import collection_create
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import SIZES, ask, signed_in, upload
from tests.chat.test_source_numbering import READ_ON_QUESTION
from tests.conftest import CORPUS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]
chromium = test_pages_ux.chromium  # one Chromium for the module


def chunk_of(url: str) -> int:
    return int(parse_qs(urlsplit(url).query)["chunk"][0])


def assert_listed_as_cited(page) -> None:
    """Each [Source N] chip of the answer opens the passage listed N-th under "Passages found"."""
    listed = page.eval_on_selector_all(
        "#sources .source-item a", "links => links.map(a => [a.textContent, a.getAttribute('href')])"
    )
    chips = page.eval_on_selector_all(
        ".turn .answer a.citation", "links => links.map(a => [a.dataset.source, a.getAttribute('href')])"
    )
    assert chips, page.inner_text(".turn .answer")
    assert [text.split("]")[0] for text, _ in listed] == [f"[{n}" for n in range(1, len(listed) + 1)]
    for number, href in chips:
        assert 1 <= int(number) <= len(listed), (number, len(listed))
        assert chunk_of(href) == chunk_of(listed[int(number) - 1][1])


def test_the_passages_beside_an_extracted_answer_are_the_ones_its_numbers_name(
    chromium, live_server, alice, no_llm
):
    collection = collection_create(name="Papers", owner=alice)
    document = upload(collection, CORPUS / "pdf" / "pasa.pdf")
    assert document.status == Document.Status.READY, document.error

    page = signed_in(chromium, live_server.url, "alice", SIZES["desktop"])
    page.goto(f"{live_server.url}/chat/?collection={collection.pk}")
    ask(page, READ_ON_QUESTION)
    page.wait_for_selector(".turn .turn-actions")
    assert_listed_as_cited(page)
    assert "read on from [" in page.inner_text("#sources")  # the case at issue is on the page
    page.reload()
    assert_listed_as_cited(page)
