"""A PDF citation in a real headless Chromium: the quoted sentence highlighted on the page itself.

The answer is extracted (no language model), so each citation quotes a sentence of its passage;
following it draws the cited page of pasa.pdf with pdf.js, highlights that sentence in the page's
text layer and scrolls it into view, marks the rest of the passage lightly, and falls back to the
passage, then to the bare page, when the text cannot be found.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from knowledge.models import Chunk, Document
from knowledge.services.collections import collection_create
from knowledge.web.passages import overlap_length
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import DESKTOP, PHONE, signed_in, upload
from tests.conftest import CORPUS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]
chromium = test_pages_ux.chromium  # one Chromium for the module

QUESTION = "How many query-paper pairs does the AutoScholarQuery training set have?"
AFTER_THE_CLICK = "the test's own dialog, after the click"


@pytest.fixture
def pasa(alice):
    collection = collection_create(name="Papers", owner=alice)
    document = upload(collection, CORPUS / "pdf" / "pasa.pdf")
    assert document.status == Document.Status.READY, document.error
    return document


def folded(text: str) -> str:
    """The comparison the viewer makes: no white space, no hyphens, one case."""
    return re.sub(r"[\s\u00ad\-\u2010\u2011]", "", text).lower()


def watched(page) -> list[str]:
    """Errors the page raises or logs, to assert none."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return errors


def open_viewer(page, url: str) -> str:
    page.goto(url)
    page.wait_for_selector("#pdf-view[data-highlight]", timeout=60_000)
    return page.get_attribute("#pdf-view", "data-highlight")


def marked(page, kind: str) -> list[str]:
    return page.locator(f"#pdf-page .textLayer .pdf-mark.{kind}").all_inner_texts()


def in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    size = page.viewport_size
    return box is not None and 0 <= box["y"] and box["y"] + box["height"] <= size["height"]


def background_alpha(page, selector: str) -> float:
    colour = page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")
    parts = re.findall(r"[\d.]+", colour)
    return float(parts[3]) if len(parts) == 4 else 1.0


def ask_and_follow(page, base: str, collection_id: int) -> tuple[str, str]:
    """Ask in the chat page, open the first citation in the side panel and follow its link to the full
    view; the citation's href and the answer's text."""
    page.goto(f"{base}/chat/?collection={collection_id}")
    page.fill("textarea[name=question]", QUESTION)
    page.press("textarea[name=question]", "Enter")
    citation = page.wait_for_selector(".turn .answer a.citation", timeout=120_000)
    href, answer = citation.get_attribute("href"), page.inner_text(".turn .answer")
    citation.click()
    page.wait_for_selector("#source-panel .chunk.cited")
    page.click("#source-panel-open")
    page.wait_for_url(re.compile(r".*/documents/\d+/view/.*"))
    page.wait_for_selector("#pdf-view[data-highlight]", timeout=60_000)
    return href, answer


def test_a_citation_highlights_its_quoted_sentence_on_the_pdf_page(chromium, live_server, pasa, bob, no_llm):
    page = signed_in(chromium, live_server.url, "alice", DESKTOP)
    errors = watched(page)
    href, answer = ask_and_follow(page, live_server.url, pasa.collection_id)

    query = parse_qs(urlsplit(href).query)
    chunk = Chunk.objects.get(pk=query["chunk"][0])
    start, end = (int(offset) for offset in query["quote"][0].split("-"))
    quote = chunk.content[start:end]
    assert f'"{" ".join(quote.split())}"' in answer  # the sentence the answer quoted
    cited_page = int(re.search(r"#page=(\d+)", href).group(1))
    assert cited_page == chunk.page
    assert page.get_attribute("#pdf-view", "data-highlight") == "quote"
    assert page.inner_text("#pdf-page-label") == f"Page {cited_page} of 15"
    # The quoted sentence, and only it, is highlighted in the page's own text layer.
    assert folded("".join(marked(page, "quote"))) == folded(quote)
    assert in_viewport(page, "#pdf-page .pdf-mark.quote")
    # The rest of the passage is marked, more lightly.
    lighter = "".join(marked(page, "passage"))
    assert len(folded(lighter)) > 200 and folded(lighter) in folded(chunk.content).replace(folded(quote), "")
    assert background_alpha(page, ".pdf-mark.passage") < background_alpha(page, ".pdf-mark.quote")
    assert page.eval_on_selector("#pdf-page canvas", "c => c.width > 0 && c.height > 0")
    # The column beside the page marks the same sentence in the passage's text.
    assert folded(page.inner_text("#cited mark.quote")) == folded(quote)
    page.screenshot(path="tests/artifacts/pdf-citation-quote.png", full_page=False)

    # Another page shows no marks; coming back to the cited page highlights it again.
    step, other_page = ("#pdf-previous", cited_page - 1) if cited_page > 1 else ("#pdf-next", 2)
    page.click(step)
    page.wait_for_selector(f"#pdf-page-label:text-is('Page {other_page} of 15')")
    page.wait_for_selector("#pdf-view[data-highlight=none]")
    assert page.locator("#pdf-page .pdf-mark").count() == 0
    page.click("#pdf-next" if step == "#pdf-previous" else "#pdf-previous")
    page.wait_for_selector("#pdf-view[data-highlight=quote]")
    assert folded("".join(marked(page, "quote"))) == folded(quote)
    assert errors == []

    # Another user gets nothing: neither the viewer nor the bytes it draws.
    other = signed_in(chromium, live_server.url, "bob", DESKTOP)
    assert other.goto(live_server.url + href).status == 404
    assert other.request.get(f"{live_server.url}/documents/{pasa.pk}/file/").status == 404
    page.context.close()
    other.context.close()


def _chunk_with_overlap(document: Document) -> tuple[Chunk, Chunk, str]:
    """A cited chunk whose earlier neighbour on the same page shares its opening text."""
    chunks = list(document.chunks.order_by("index"))
    for earlier, later in zip(chunks, chunks[1:], strict=False):
        shared = overlap_length(earlier.content, later.content)
        if earlier.source_ref == later.source_ref and shared >= 40:
            return earlier, later, later.content[:shared]
    pytest.fail("pasa.pdf has no page with two overlapping chunks")


def test_the_overlap_between_neighbouring_passages_is_shown_once(chromium, live_server, pasa):
    earlier, cited, overlap = _chunk_with_overlap(pasa)
    page = signed_in(chromium, live_server.url, "alice", DESKTOP)
    errors = watched(page)
    url = f"{live_server.url}/documents/{pasa.pk}/view/?chunk={cited.pk}#page={cited.page}"
    assert open_viewer(page, url) == "passage"  # no quote given: the passage is highlighted

    column = folded(page.inner_text("#passage"))
    assert column.count(folded(overlap)) == 1
    assert folded(overlap) in folded(page.inner_text("#cited"))  # shown whole with the cited passage
    assert folded(earlier.content[: -len(overlap)]) in column  # the neighbour keeps the rest
    # On the page the passage, overlap included, is marked once: no text marked twice.
    passage = folded("".join(marked(page, "passage")))
    assert passage.count(folded(overlap)) == 1 and folded(cited.content).startswith(passage[:100])
    assert errors == []
    page.context.close()


def test_a_quote_or_passage_not_found_falls_back_to_the_passage_then_the_page(chromium, live_server, pasa):
    chunks = list(pasa.chunks.order_by("index"))
    cited = next(c for c in chunks if c.page == 3)
    elsewhere = next(c for c in chunks if c.page == 9)
    page = signed_in(chromium, live_server.url, "alice", DESKTOP)
    errors = watched(page)
    view = f"{live_server.url}/documents/{pasa.pk}/view/?chunk={cited.pk}"

    # A link whose quote is not a range of the passage: the passage is highlighted instead.
    assert open_viewer(page, f"{view}&quote=0-999999") == "passage"
    assert marked(page, "quote") == [] and marked(page, "passage")
    assert "not found" not in page.inner_text("#pdf-status")
    assert in_viewport(page, "#pdf-page .pdf-mark.passage")

    # A quoted sentence that is in the passage but not in the page's text (text extracted
    # differently): the passage is highlighted, and the page says the sentence was not found.
    unprinted = "This sentence was never printed on any page of the paper."
    content = f"{cited.content}\n\n{unprinted}"
    Chunk.objects.filter(pk=cited.pk).update(content=content)
    where = f"{content.index(unprinted)}-{len(content)}"
    assert open_viewer(page, f"{view}&quote={where}") == "passage"
    assert marked(page, "quote") == [] and marked(page, "passage")
    assert "quoted sentence was not found" in page.inner_text("#pdf-status")

    # A passage whose text is not on its page (the PDF's text differs from what was extracted):
    # the page alone, said so, without an error.
    Chunk.objects.filter(pk=cited.pk).update(content=elsewhere.content)
    assert open_viewer(page, view) == "page"
    assert page.locator("#pdf-page .pdf-mark").count() == 0
    assert "not found" in page.inner_text("#pdf-status")
    assert page.inner_text("#pdf-page-label") == "Page 3 of 15"
    assert page.eval_on_selector("#pdf-page canvas", "c => c.width > 0")
    assert errors == []

    # Bytes that pdf.js cannot read: a message and the download link, nothing broken.
    broken = upload(pasa.collection, Path("broken.pdf"), b"%PDF-1.4\n" + b"not a PDF at all\n" * 50)
    assert open_viewer(page, f"{live_server.url}/documents/{broken.pk}/view/") == "error"
    assert "download the original" in page.inner_text("#pdf-status")
    assert page.is_visible("text=Download the original")
    assert not [error for error in errors if "pdf viewer" not in error]  # only the viewer's own report
    page.context.close()


def test_the_viewer_fits_a_phone_screen(chromium, live_server, pasa, no_llm):
    page = signed_in(chromium, live_server.url, "alice", PHONE)
    errors = watched(page)
    ask_and_follow(page, live_server.url, pasa.collection_id)
    assert page.get_attribute("#pdf-view", "data-highlight") == "quote"
    assert in_viewport(page, "#pdf-page .pdf-mark.quote")
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1] == PHONE["width"]
    page.screenshot(path="tests/artifacts/pdf-citation-phone.png", full_page=False)
    assert errors == []
    page.context.close()


def scripted_pdf() -> bytes:
    """Page 3 of pasa.pdf with a script that runs on opening and a link to a javascript: address."""
    import pypdf
    from pypdf.actions import JavaScript
    from pypdf.annotations import Link
    from pypdf.generic import DictionaryObject, NameObject, TextStringObject

    writer = pypdf.PdfWriter()
    writer.add_page(pypdf.PdfReader(CORPUS / "pdf" / "pasa.pdf").pages[2])
    writer.add_open_action(JavaScript("app.alert('pdf script ran');"))
    link = Link(rect=(50, 50, 550, 750), url="https://example.invalid/")
    script = TextStringObject("app.alert('link')")
    link[NameObject("/A")] = DictionaryObject(
        {NameObject("/S"): NameObject("/JavaScript"), NameObject("/JS"): script}
    )
    writer.add_annotation(page_number=0, annotation=link)
    out = io.BytesIO()
    writer.write(out)
    assert out.getvalue().count(b"/JavaScript") >= 2  # both scripts are in the file
    return out.getvalue()


def test_nothing_in_the_pdf_runs_in_the_viewer(chromium, live_server, pasa):
    document = upload(pasa.collection, Path("scripted.pdf"), scripted_pdf())
    assert document.status == Document.Status.READY, document.error
    chunk = document.chunks.order_by("index").first()
    page = signed_in(chromium, live_server.url, "alice", DESKTOP)
    errors = watched(page)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    # Drawn: pdf.js has loaded the document (when its open action would run) and drawn the page.
    assert open_viewer(page, f"{live_server.url}/documents/{document.pk}/view/?chunk={chunk.pk}") == "passage"
    assert page.locator("#pdf-page a, #pdf-page iframe, #pdf-page form").count() == 0
    page.click("#pdf-page", position={"x": 200, "y": 300})  # where the link lies on the page
    # A dialog of our own, from a task queued after the click's: dialogs come one at a time, in order,
    # so once it has come any dialog the PDF's scripts or the click opened has come before it.
    with page.expect_event("dialog", lambda dialog: dialog.message == AFTER_THE_CLICK):
        page.evaluate("message => { setTimeout(() => alert(message)); }", AFTER_THE_CLICK)
    assert dialogs == [AFTER_THE_CLICK]
    assert page.url.startswith(f"{live_server.url}/documents/{document.pk}/view/")
    assert errors == []
    page.context.close()
