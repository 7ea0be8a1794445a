"""The pages as a new user meets them, in a real headless Chromium, at desktop size and at 390x844.

One test per finding of the usability review (numbered as in the review), each run at both sizes
in the same test, plus copy, rename/delete sessions and rating answers. One Chromium for the
module; each size gets its own browser context (cookies, viewport). Documents are small real
files from the shared corpus, processed synchronously by the test settings.
"""

from __future__ import annotations

import os
import re

import pytest

from knowledge.models import ChatSession, ChatTurn, Collection, Document, KnowledgeSetting
from knowledge.parameter_values import PARAMETERS, global_settings_ensure
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.browser.test_journey import CHROMIUM, CHROMIUM_ARGS
from tests.conftest import CORPUS
from tests.synthesis.openai_server import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = {"desktop": DESKTOP, "phone": PHONE}
QUESTION = "Why do cars seem to roll uphill on a gravity hill?"


@pytest.fixture(scope="module")
def chromium():
    """One browser for the whole module (each test opens its own contexts)."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the tests' own ORM calls are safe.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def signed_in(chromium, base: str, username: str, size: dict, **context_options):
    """A page of a fresh context at ``size``, signed in as ``username`` (password pw-<username>)."""
    context = chromium.new_context(viewport=size, **context_options)
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/$"))
    return page


def operator_signed_in(chromium, base: str, size: dict):
    """An admin page of a fresh context at ``size``, signed in as the operator (password pw-operator)."""
    page = chromium.new_context(viewport=size).new_page()
    page.goto(f"{base}/admin/login/")
    page.fill("input[name=username]", "operator")
    page.fill("input[name=password]", "pw-operator")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
    return page


def upload(collection: Collection, path, data: bytes | None = None) -> Document:
    """Upload (and, with the test settings' synchronous tasks, process) a file; its row, reloaded."""
    data = path.read_bytes() if data is None else data
    result = document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=data))
    return Document.objects.get(pk=result.document.pk)


@pytest.fixture
def hills(alice):
    collection = collection_create(name="Hills", owner=alice)
    document = upload(collection, CORPUS / "text" / "gravity_hill.md")
    assert document.status == Document.Status.READY, document.error
    return collection


def ask(page, question: str = QUESTION) -> None:
    page.fill("textarea[name=question]", question)
    page.press("textarea[name=question]", "Enter")


def each_size(chromium, base, username, check, **context_options):
    for name, size in SIZES.items():
        page = signed_in(chromium, base, username, size, **context_options)
        try:
            check(page, name)
        finally:
            page.context.close()


# -- 1. chat with nothing chosen ---------------------------------------------------------------------


def test_1_chat_preselects_collections_disables_ask_and_keeps_the_question(
    chromium, live_server, hills, bob, no_llm
):
    def check(page, size):
        page.goto(f"{live_server.url}/chat/")
        # The user's own collection is preselected: Ask works at once.
        assert page.eval_on_selector_all(
            "select[name=collections] option:checked", "os => os.map(o => o.text)"
        ) == ["Hills"]
        assert page.is_enabled("#ask-button")
        page.select_option("select[name=collections]", [])
        assert page.is_disabled("#ask-button")
        assert page.is_visible("#scope-hint")
        page.select_option("select[name=collections]", label="Hills")
        assert page.is_enabled("#ask-button")
        # The server refuses (the collection was taken away meanwhile): its message shows, the question stays.
        Collection.objects.filter(pk=hills.pk).update(owner=bob)
        page.fill("textarea[name=question]", "What is a gravity hill?")
        page.click("#ask-button")
        page.wait_for_selector("#ask-error:has-text('no such collection')")
        assert page.input_value("textarea[name=question]") == "What is a gravity hill?"
        assert "(400)" not in page.inner_text("main")
        Collection.objects.filter(pk=hills.pk).update(owner=hills.owner)

    each_size(chromium, live_server.url, "alice", check)


# -- 2. Enter sends, progress is visible, a running answer can be stopped -----------------------------


def test_2_enter_sends_shift_enter_breaks_the_line_and_a_running_answer_stops(
    chromium, live_server, hills, llm_env
):
    slow = Reply(text=" ".join(["Cars only seem to roll uphill [Source 1]."] * 40), chunk_delay=0.15)
    llm_env.responder = lambda request: slow

    def check(page, size):
        page.goto(f"{live_server.url}/chat/")
        page.click("textarea[name=question]")
        page.keyboard.type("first line")
        page.keyboard.press("Shift+Enter")
        page.keyboard.type("second line")
        assert page.input_value("textarea[name=question]") == "first line\nsecond line"
        assert page.query_selector(".turn") is None  # Shift+Enter did not send
        page.fill("textarea[name=question]", QUESTION)
        page.keyboard.press("Enter")
        page.wait_for_selector(".turn .question:has-text('gravity hill')")
        # While it is written: a typing indicator, the steps so far, and Stop.
        page.wait_for_selector(".turn .typing", state="visible")
        page.wait_for_selector(".turn .events li:has-text('Searching 1 collection')")
        page.wait_for_selector(".turn.writing .answer:has-text('Cars only seem')", timeout=30_000)
        assert page.is_visible("#stop")
        assert page.input_value("textarea[name=question]") == ""
        page.click("#stop")
        page.wait_for_selector(".turn .stopped:has-text('Stopped')")
        assert page.is_hidden("#stop")
        assert page.query_selector(".turn .typing") is None
        assert page.is_enabled("#ask-button")

    each_size(chromium, live_server.url, "alice", check)


# -- 3. phone layout ---------------------------------------------------------------------------------


def test_3_navigation_collapses_into_a_menu_and_the_question_box_comes_first_on_a_phone(
    chromium, live_server, hills, no_llm
):
    def check(page, size):
        page.goto(f"{live_server.url}/chat/")
        tokens_link = page.locator("#site-nav a:has-text('API tokens')")
        if size == "phone":
            assert page.is_visible("#nav-toggle")
            assert not tokens_link.is_visible()
            page.click("#nav-toggle")
            assert tokens_link.is_visible() and page.is_visible("#site-nav a:has-text('Change password')")
            page.click("#nav-toggle")
            assert not tokens_link.is_visible()
        else:
            assert not page.is_visible("#nav-toggle")
            assert tokens_link.is_visible()
        box = page.locator("textarea[name=question]").bounding_box()
        assert box["y"] + box["height"] <= page.viewport_size["height"]  # above the fold
        conversation = page.locator(".conversation").bounding_box()
        sessions = page.locator(".sessions").bounding_box()
        if size == "phone":
            assert conversation["y"] < sessions["y"]  # the conversation first, sessions below
        assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]

    each_size(chromium, live_server.url, "alice", check)


# -- 4. upload rows update in place ------------------------------------------------------------------


def test_4_upload_rows_and_document_rows_update_in_place_with_status_error_and_actions(
    chromium, live_server, alice, no_llm
):
    damaged = (CORPUS / "pdf" / "pasa.pdf").read_bytes()[:4000]

    def check(page, size):
        collection = collection_create(name=f"Uploads {size}", owner=alice)
        page.goto(f"{live_server.url}/collections/{collection.pk}/")
        page.set_input_files(
            "#file-input",
            [
                {
                    "name": "gravity_hill.md",
                    "mimeType": "text/markdown",
                    "buffer": (CORPUS / "text" / "gravity_hill.md").read_bytes(),
                },
                {"name": "broken.pdf", "mimeType": "application/pdf", "buffer": damaged},
                {"name": "empty.txt", "mimeType": "text/plain", "buffer": b""},
            ],
        )
        page.wait_for_selector("#uploads li:nth-child(1) .state:has-text('Ready')", timeout=120_000)
        page.wait_for_selector("#uploads li:nth-child(2) .state:has-text('Failed')", timeout=120_000)
        assert "the PDF is damaged or incomplete (" in page.inner_text("#uploads li:nth-child(2) .state")
        rejected = page.locator("#uploads li:nth-child(3)")
        rejected.locator(".state.error").wait_for()
        assert rejected.locator(".progress").count() == 0  # no full blue bar beside the reason
        assert "empty" in rejected.inner_text()
        # The document rows got their title link, Retry and Delete without a reload.
        good = Document.objects.get(collection=collection, filename="gravity_hill.md")
        bad = Document.objects.get(collection=collection, filename="broken.pdf")
        row = page.locator(f'#documents tr[data-id="{good.pk}"]')
        assert row.locator("a[data-role=link]").get_attribute("href") == f"/documents/{good.pk}/view/"
        assert row.locator("a[data-role=link]").inner_text() == "Gravity hill"
        assert row.locator("button:has-text('Delete')").count() == 1
        failed = page.locator(f'#documents tr[data-id="{bad.pk}"]')
        failed.locator("button:has-text('Retry')").wait_for()
        assert "damaged or incomplete" in failed.locator('[data-role="error"]').inner_text()

    each_size(chromium, live_server.url, "alice", check)


# -- 5. collection page order -------------------------------------------------------------------------


def test_5_collection_page_puts_documents_first_settings_second_and_offers_to_ask(
    chromium, live_server, hills, no_llm
):
    def check(page, size):
        page.goto(f"{live_server.url}/collections/{hills.pk}/")
        drop = page.locator("#dropzone").bounding_box()
        documents = page.locator("#documents").bounding_box()
        settings = page.locator("#collection-settings").bounding_box()
        assert drop["y"] < settings["y"] and documents["y"] < settings["y"]
        assert page.get_attribute("#collection-settings", "open") is None  # secondary: closed
        assert not page.is_visible("#reindex-form")
        page.click("#collection-settings > summary")
        assert "Documents are split at paragraph breaks into passages of up to about 1,000 characters" in (
            page.inner_text("#reindex-form")
        )
        assert "(paragraph, 1000/200)" not in page.inner_text("main")
        page.click("#ask-collection")
        page.wait_for_url(re.compile(rf".*/chat/\?collection={hills.pk}$"))
        assert page.eval_on_selector_all(
            "select[name=collections] option:checked", "os => os.map(o => o.text)"
        ) == ["Hills"]

    each_size(chromium, live_server.url, "alice", check)


# -- 6. chat state keeps up ---------------------------------------------------------------------------


def test_6_session_list_sources_and_scope_keep_up_without_a_reload(chromium, live_server, hills, no_llm):
    def check(page, size):
        page.goto(f"{live_server.url}/chat/")
        ask(page)
        page.wait_for_selector(".turn .turn-actions")
        items = page.locator("#session-list li.session-item")
        assert items.count() == ChatSession.objects.filter(user=hills.owner).count()
        assert "No sessions yet" not in page.inner_text("#session-list")
        assert items.first.inner_text().startswith("Why do cars seem")
        ask(page, "Where are gravity hills found?")
        page.wait_for_selector(".turn:nth-child(2) .turn-actions")
        assert page.locator("#sources .sources-turn").count() == 2  # every turn's sources, not only the last
        page.reload()  # a resumed session
        assert page.locator("#sources .sources-turn").count() == 2
        assert page.locator("#sources .source-item").count() >= 2
        assert "searching the collection Hills" in page.inner_text("#scope")

    each_size(chromium, live_server.url, "alice", check)


# -- 7. source labels, titles, summaries --------------------------------------------------------------


def test_7_sources_read_like_citations_and_documents_have_real_titles(chromium, live_server, alice, no_llm):
    collection = collection_create(name="Mixed", owner=alice)
    markdown = upload(collection, CORPUS / "text" / "gravity_hill.md")
    pdf = upload(collection, CORPUS / "pdf" / "Seige_of_Vicksburg_Sample_OCR.pdf")
    html = upload(collection, CORPUS / "html" / "httpbin_sample.html")
    assert {d.status for d in (markdown, pdf, html)} == {Document.Status.READY}
    headings = {ref.removeprefix("heading=") for ref in markdown.chunks.values_list("source_ref", flat=True)}

    def check(page, size):
        page.goto(f"{live_server.url}/chat/?collection={collection.pk}")
        ask(page, "What happened during the siege of Vicksburg?")
        page.wait_for_selector(".turn .turn-actions")
        sources = page.inner_text("#sources")
        assert "page=" not in sources and "heading=" not in sources
        assert re.search(r"— p\. \d+", sources)
        ask(page, "What is a gravity hill?")
        page.wait_for_selector(".turn:nth-child(2) .turn-actions")
        sources = page.inner_text("#sources")
        assert "heading=" not in sources
        assert any(f"— {heading}" in sources for heading in headings)  # the heading's own text
        page.goto(f"{live_server.url}/collections/{collection.pk}/")
        titles = page.locator("#documents a[data-role=link]").all_inner_texts()
        assert {"Gravity hill", "Herman Melville - Moby-Dick", "Seige of Vicksburg Sample OCR"} <= set(titles)
        api = page.request.get(f"{live_server.url}/api/v1/documents/{html.pk}/").json()
        assert api["title"] == "Herman Melville - Moby-Dick"
        page.goto(f"{live_server.url}/documents/{pdf.pk}/view/")
        summary = page.inner_text("#summary")
        assert (
            not re.search(r"\bSeige_of_Vicksburg", summary)
            and "Seige of Vicksburg Sample OCR. " not in summary
        )

    each_size(chromium, live_server.url, "alice", check)


# -- 8. profiles: grouped, explained, advanced behind a disclosure -------------------------------------


def test_8_profile_parameters_are_grouped_explained_and_advanced_ones_tucked_away(
    chromium, live_server, hills
):
    def check(page, size):
        page.goto(f"{live_server.url}/profiles/")
        shown = page.locator("#profile-form .param:visible")
        assert 0 < shown.count() <= 8
        assert page.get_attribute("#advanced-parameters", "open") is None
        assert not page.locator(".param[data-key='rrfK']").is_visible()
        assert not page.get_by_text("agentic.maxRetries", exact=True).is_visible()
        for index in range(shown.count()):
            assert len(shown.nth(index).locator(".muted").inner_text().split()) >= 5  # a sentence each
        assert page.locator("#profile-form h3").count() >= 2  # grouped
        page.click("#advanced-parameters > summary")
        assert page.locator(".param[data-key='rrfK']").is_visible()
        assert page.locator("#profile-form .param:visible").count() == len(PARAMETERS)

    each_size(chromium, live_server.url, "alice", check)


# -- 9. token counters, damaged-PDF reason, marketplace counts ------------------------------------------


def test_9_no_token_jargon_without_a_model_and_marketplace_counts_ready_documents(
    chromium, live_server, hills, no_llm
):
    broken = upload(
        hills, CORPUS / "pdf" / "pasa.pdf", data=(CORPUS / "pdf" / "pasa.pdf").read_bytes()[:4000]
    )
    assert broken.status == Document.Status.FAILED
    Collection.objects.filter(pk=hills.pk).update(listed=True)
    assert hills.documents.count() == 2

    def check(page, size):
        page.goto(f"{live_server.url}/chat/")
        ask(page)
        page.wait_for_selector(".turn .turn-actions")
        text = page.inner_text("main")
        assert "(estimate)" not in text and not re.search(r"\d+ in / \d+ out", text)
        assert page.query_selector("#tokens") is None
        page.goto(f"{live_server.url}/collections/{hills.pk}/")
        assert "the PDF is damaged or incomplete (" in page.inner_text("#documents")
        page.goto(f"{live_server.url}/marketplace/")
        assert page.inner_text(f'#listings tr[data-id="{hills.pk}"] .document-count') == "1"

    each_size(chromium, live_server.url, "alice", check)


# -- 10. locked settings in the admin ---------------------------------------------------------------------


def test_10_locked_settings_stand_out_in_the_admin_and_can_be_filtered(
    chromium, live_server, django_user_model, no_llm
):
    django_user_model.objects.create_superuser("operator", "op@example.com", "pw-operator")
    global_settings_ensure()  # a transactional test starts from empty tables
    KnowledgeSetting.objects.filter(key="maxDocs").update(is_locked=True)

    def check(page, size):
        page.goto(f"{live_server.url}/admin/knowledge/knowledgesetting/")
        locked_row = page.locator("#result_list tr:has(.lock-badge.locked)")
        assert locked_row.count() == 1 and "Passages per answer" in locked_row.inner_text()
        page.goto(f"{live_server.url}/admin/knowledge/knowledgesetting/?is_locked__exact=1")
        assert page.locator("#result_list tbody tr").count() == 1

    for size in SIZES.values():
        page = operator_signed_in(chromium, live_server.url, size)
        check(page, size)
        page.context.close()


# -- copy, rate, rename and delete --------------------------------------------------------------------------


def test_answers_copy_and_rate_and_sessions_rename_and_delete(chromium, live_server, hills, no_llm):
    def check(page, size):
        dialogs = []

        def answer_dialog(dialog):
            dialogs.append(dialog.type)
            dialog.accept(f"Hills {size}" if dialog.type == "prompt" else None)

        page.on("dialog", answer_dialog)
        page.goto(f"{live_server.url}/chat/")
        ask(page)
        card = page.locator(".turn").first
        card.locator(".turn-actions").wait_for()
        card.locator("[data-action=copy]").click()
        card.locator("[data-action=copy]:has-text('Copied')").wait_for()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied and copied == card.locator(".answer").inner_text().strip()

        card.locator("[data-rating=up]").click()
        card.locator("[data-rating=up][aria-pressed=true]").wait_for()
        card.locator(".feedback-comment textarea").fill(f"Clear and cited ({size})")
        card.locator(".feedback-comment button").click()
        card.locator(".feedback-comment .note:has-text('saved')").wait_for()
        session = ChatSession.objects.filter(user=hills.owner).order_by("-pk").first()
        turn = ChatTurn.objects.get(session=session, index=0)
        assert (turn.feedback_rating, turn.feedback_comment) == ("up", f"Clear and cited ({size})")
        page.reload()
        assert page.get_attribute(".turn [data-rating=up]", "aria-pressed") == "true"

        item = page.locator(f'#session-list li[data-id="{session.pk}"]')
        item.locator("[data-action=rename-session]").click()
        item.locator(f".session-title:has-text('Hills {size}')").wait_for()
        session.refresh_from_db()
        assert session.title == f"Hills {size}"
        item.locator("[data-action=delete-session]").click()
        page.wait_for_url(re.compile(r".*/chat/$"))
        assert not ChatSession.objects.filter(pk=session.pk).exists()
        assert dialogs == ["prompt", "confirm"]

    each_size(chromium, live_server.url, "alice", check, permissions=["clipboard-read", "clipboard-write"])
