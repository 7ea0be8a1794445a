"""A user's journey in a real headless Chromium against a live server.

Sign up, create a collection, upload a real PDF, watch it become ready, ask in
chat, see the streamed answer with a citation, click it and land on the PDF's
cited page with the passage highlighted; a second user cannot open the first
user's private collection. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from knowledge.ingestion.summary import SUMMARY_SYSTEM_PROMPT
from tests.conftest import CORPUS, REPO_ROOT
from tests.synthesis.openai_server import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO_ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUESTION = "How many query-paper pairs does the AutoScholarQuery training set have?"


@pytest.fixture
def browser(monkeypatch):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are safe.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def sign_up(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/signup/")
    page.fill("input[name=username]", username)
    page.fill("input[name=email]", f"{username}@example.com")
    page.fill("input[name=password1]", "a-Long-pass-123")
    page.fill("input[name=password2]", "a-Long-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/$"))


def test_upload_ask_and_follow_a_citation_to_the_pdf_page(browser, live_server, llm_env):
    # A real OpenAI-compatible server on 127.0.0.1 summarises the PDF when it is processed,
    # then streams the answer word by word.
    answer = Reply(
        text="AutoScholarQuery's training set holds 33,511 query-paper pairs [Source 1].", chunk_delay=0.05
    )
    summary = Reply(
        text='{"document_type": "Research paper", "summary": "PaSa, an LLM agent for academic paper '
        'search.", "key_topics": ["paper search", "AutoScholarQuery"], "use_for": "questions about PaSa"}'
    )
    llm_env.responder = lambda request: summary if request.system == SUMMARY_SYSTEM_PROMPT else answer
    base = live_server.url
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_up(page, base, "alice")
    page.click("text=Log out")
    page.wait_for_url(re.compile(r".*/accounts/login/$"))
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "a-Long-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/$"))

    page.fill("#new-collection input[name=name]", "Papers")
    page.click("#new-collection button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/\d+/$"))
    collection_url = page.url

    page.set_input_files("#file-input", str(CORPUS / "pdf" / "pasa.pdf"))
    page.wait_for_selector("#uploads li .state:text-matches('processing|Ready')", timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "collection-processing.png"), full_page=True)
    page.wait_for_selector("#documents .badge.status-ready", timeout=180_000)
    page.screenshot(path=str(ARTIFACTS / "collection-ready.png"), full_page=True)
    page.click("#collection-settings > summary")  # settings are a secondary section
    page.click("#listing-form button")  # list it in the marketplace
    page.wait_for_selector("#listing-form .badge.listed")

    page.goto(f"{base}/chat/")
    page.select_option("select[name=collections]", label="Papers")
    page.fill("textarea[name=question]", QUESTION)
    page.click("#ask button[type=submit]")
    # A selector, not wait_for_function: the Content-Security-Policy refuses evaluating strings.
    page.wait_for_selector(".turn .answer:has-text('AutoScholarQuery')", timeout=120_000)
    citation = page.wait_for_selector(".turn .answer a.citation", timeout=120_000)
    assert "33,511 query-paper pairs" in page.inner_text(".turn .answer")
    assert any(request.streamed for request in llm_env.requests)
    assert page.inner_text("#sources")  # the retrieved documents and their scores
    page.screenshot(path=str(ARTIFACTS / "chat-answer.png"), full_page=True)

    href = citation.get_attribute("href")
    cited_page = int(re.search(r"#page=(\d+)", href).group(1))
    citation.click()  # opens beside the chat; its link opens the full view
    page.wait_for_selector("#source-panel .chunk.cited")
    page.click("#source-panel-open")
    page.wait_for_url(re.compile(r".*/documents/\d+/view/.*"))
    page.wait_for_selector("#pdf-view[data-highlight]", timeout=60_000)
    assert page.inner_text("#pdf-page-label").startswith(f"Page {cited_page} of ")
    assert page.get_attribute("#pdf-view", "data-highlight") == "passage"  # the model quoted nothing
    assert page.inner_text(".passage .cited-section h2") == f"Page {cited_page}"
    assert page.query_selector(".chunk.cited") is not None
    assert "PaSa, an LLM agent for academic paper search." in page.inner_text("#summary")
    assert "Summary written by test-model" in page.inner_text("#summary")
    page.screenshot(path=str(ARTIFACTS / "citation-pdf-page.png"), full_page=True)

    page.goto(f"{base}/marketplace/")
    assert "Papers" in page.inner_text("main")
    page.screenshot(path=str(ARTIFACTS / "marketplace.png"), full_page=True)

    other = browser.new_context().new_page()
    sign_up(other, base, "bob")
    # Listed, but private: Bob sees the listing, never the content.
    response = other.goto(collection_url)
    assert response.status == 404
    assert "pasa.pdf" not in other.content()
    assert os.path.getsize(ARTIFACTS / "chat-answer.png") > 10_000
