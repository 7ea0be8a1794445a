"""Hostile content in a real headless Chromium: no script of an upload runs on our origin,
and every page works under a strict Content-Security-Policy without a single violation.
"""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import Error as PlaywrightError
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from accounts.models import ApiToken
from knowledge.models import Document
from knowledge.services.collections import collection_create
from tests.browser.test_journey import browser  # noqa: F401  (the Chromium fixture)
from tests.conftest import CORPUS
from tests.waiting import until

pytestmark = [pytest.mark.browser, pytest.mark.security, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]

# What an attacker's script does in a victim's session: show it ran, and mint an API token for itself.
PAYLOAD = (
    "<script>alert('xss');fetch('/api/v1/tokens/',{method:'POST',credentials:'same-origin',"
    "headers:{'Content-Type':'application/json','X-CSRFToken':"
    "(document.cookie.match(/csrftoken=([^;]+)/)||[])[1]},body:JSON.stringify({name:'pwned'})})</script>"
)
HOSTILE_PAGE_UPLOADS = [
    ("evil.html", "text/html", f"<!doctype html><html><body><h1>Notes</h1>{PAYLOAD}</body></html>"),
    ("page.md", "text/html", f"# Page\n\nMeeting notes.\n\n{PAYLOAD}\n"),
    (
        "pic.txt",
        "image/svg+xml",
        f'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)">{PAYLOAD}<text>hi</text></svg>',
    ),
]
EXTENSIONLESS = f"<html><body><p>Release notes.</p>{PAYLOAD}</body></html>"

# Any of these in the console means the policy blocked something a page needs.
CSP_CONSOLE = re.compile(r"Content Security Policy|Content-Security-Policy", re.I)
# Images of these origins are refused on purpose: their reports come after every earlier one.
CANARY = "https://csp-canary-{}.invalid"
CANARIES = re.compile(r"https://csp-canary-\d+\.invalid")
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + e.sourceFile);
});
"""


def log_in(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/$"))


def _api_upload(user, collection, name: str, data: bytes, declared: str) -> Document:
    _, secret = token_create(user=user, name="uploads")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    upload = SimpleUploadedFile(name, data, content_type=declared)
    response = api.post(
        f"/api/v1/collections/{collection.pk}/documents/", {"file": upload}, format="multipart"
    )
    assert response.status_code == 201, response.content
    return Document.objects.get(pk=response.json()["id"])


def test_uploaded_script_never_runs_in_another_users_session(browser, live_server, alice, bob, no_llm):  # noqa: F811
    base = live_server.url
    collection = collection_create(name="Shared notes", owner=bob, visibility="public")
    uploader = browser.new_context().new_page()
    log_in(uploader, base, "bob", "pw-bob")
    uploader.goto(f"{base}/collections/{collection.pk}/")
    uploader.set_input_files(
        "#file-input",
        [
            {"name": name, "mimeType": declared, "buffer": text.encode()}
            for name, declared, text in HOSTILE_PAGE_UPLOADS
        ],
    )
    # Sent one after the other: the third row's state changes last. (No wait_for_function here:
    # it evaluates strings, which the Content-Security-Policy rightly refuses.)
    uploader.wait_for_selector(
        "#uploads li:nth-child(3) .state:text-matches('processing|Ready|Failed')", timeout=120_000
    )
    _api_upload(bob, collection, "notes", EXTENSIONLESS.encode(), "text/html")
    documents = list(Document.objects.filter(collection=collection))
    assert {d.filename for d in documents} == {"evil.html", "page.md", "pic.txt", "notes"}

    victim = browser.new_context(accept_downloads=True).new_page()
    dialogs: list[str] = []
    victim.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    requests: list[str] = []
    victim.on("request", lambda request: requests.append(f"{request.method} {request.url}"))
    log_in(victim, base, "alice", "pw-alice")
    rendered = []
    for document in documents:
        viewer = f"{base}/documents/{document.pk}/view/"
        victim.goto(viewer)
        assert victim.query_selector("iframe") is None  # only PDFs are embedded
        link = victim.get_attribute("text=Download the original", "href")
        for url in (link, f"/documents/{document.pk}/file/?inline=1"):
            if not opens_as_download(victim, base + url):
                rendered.append(url)
    # The payload runs as its page loads: its script and the SVG's onload before the load event each
    # goto waits for (a dialog holds that event until it is dismissed), its fetch a request issued
    # then. Leaving for a page of ours not seen before ends whatever the last page did; its request
    # in the log says every request and dialog before it has been reported.
    victim.goto(f"{base}/accounts/tokens/")
    assert f"GET {base}/accounts/tokens/" in requests
    assert rendered == []  # every original was a download, never a page of ours showing the upload
    assert dialogs == []
    assert [r for r in requests if "/api/v1/tokens/" in r] == []
    assert not ApiToken.objects.filter(name="pwned").exists()


def opens_as_download(page, url: str) -> bool:
    """Navigate to ``url``: True when the browser downloads it, False when it renders it."""
    try:
        page.goto(url)
    except PlaywrightError as exc:  # Playwright's way of saying a navigation became a download
        if "Download is starting" not in str(exc):
            raise
        return True
    return False


class PolicyWatch:
    """Every page's policy header and every violation Chromium reports, in the console or as an event."""

    def __init__(self, page):
        self.page = page
        self.policies: dict[str, str | None] = {}
        self.violations: list[str] = []
        self.canaries, self.console_canaries = 0, []
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("response", self._response)
        page.on("console", self._console)

    def _response(self, response) -> None:
        if response.request.resource_type == "document" and response.request.frame == self.page.main_frame:
            self.policies[response.url] = response.headers.get("content-security-policy")

    def _console(self, message) -> None:
        if CANARIES.search(message.text):
            self.console_canaries.append(message.text)
        elif CSP_CONSOLE.search(message.text):
            self.violations.append(f"{self.page.url}: {message.text}")

    def visit(self, url: str, ready: str = "body") -> None:
        self.page.goto(url)
        self.page.wait_for_selector(ready)
        self.collect()

    def collect(self) -> None:
        """The page's violations so far. They are reported asynchronously, so the page first asks for
        an image the policy refuses: once that violation is reported, as an event and in the console,
        every earlier one has been too."""
        self.canaries += 1
        canary = CANARY.format(self.canaries)  # an origin: all a report may give of a refused URL

        def reported() -> list[str] | None:
            found = self.page.evaluate("window.__violations || []")
            heard = any(canary in text for text in self.console_canaries)
            return found if heard and any(canary in v for v in found) else None

        self.page.evaluate("url => { new Image().src = url; }", f"{canary}/refused.png")
        found = until(
            reported,
            f"the report of the refused {canary} on {self.page.url}",
            10,
            every=0.05,
            pause=lambda seconds: self.page.wait_for_timeout(seconds * 1000),
        )
        self.violations.extend(f"{self.page.url}: {v}" for v in found if not CANARIES.search(v))

    def assert_strict_and_clean(self) -> None:
        assert self.violations == [], "\n".join(self.violations)
        assert self.policies
        for url, policy in self.policies.items():
            assert policy, f"{url} has no Content-Security-Policy"
            directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
            assert directives["script-src"] == "'self'", url
            assert "'unsafe-inline'" not in policy, url
            assert directives["object-src"] == "'none'" and directives["base-uri"] == "'none'", url


def test_every_page_works_under_a_strict_content_security_policy(
    browser,  # noqa: F811
    live_server,
    alice,
    django_user_model,
    no_llm,
):
    base = live_server.url
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    watch = PolicyWatch(page)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    log_in(page, base, "alice", "pw-alice")
    watch.collect()

    page.fill("#new-collection input[name=name]", "Sieges")
    page.click("#new-collection button[type=submit]")
    page.wait_for_url(re.compile(r".*/collections/\d+/$"))
    page.set_input_files("#file-input", str(CORPUS / "pdf" / "Seige_of_Vicksburg_Sample_OCR.pdf"))
    page.wait_for_selector("#uploads li .state:text-matches('processing|Ready')", timeout=60_000)
    page.wait_for_selector("#documents .badge.status-ready", timeout=180_000)
    bar = page.eval_on_selector("#uploads li .progress > span", "e => e.style.width")
    assert bar == "100%"  # the upload's progress bar, drawn by the page's script
    page.click("#documents button.danger")  # the confirmation (on a row the script drew), from a script file
    assert dialogs and dialogs[-1].startswith("Delete Seige_of_Vicksburg_Sample_OCR.pdf")
    watch.collect()
    page.reload()
    assert page.query_selector("#documents .badge.status-ready") is not None  # dismissed: kept
    watch.collect()

    document = Document.objects.get(filename="Seige_of_Vicksburg_Sample_OCR.pdf")
    chunk = document.chunks.order_by("index")[3]
    with page.expect_response(lambda r: r.url.endswith(f"/documents/{document.pk}/file/")) as fetched:
        watch.visit(f"{base}/documents/{document.pk}/view/?chunk={chunk.pk}", "#pdf-view[data-highlight]")
    pdf = fetched.value  # the viewer's script reads the bytes of the sandboxed download, nothing inline
    assert pdf.status == 200 and pdf.headers["content-type"] == "application/pdf"
    assert pdf.headers["content-disposition"].startswith("attachment;")
    assert page.query_selector("iframe") is None and page.frames == [page.main_frame]
    # pdf.js drew the page and its text layer with the page's policy (violations are collected).
    assert page.get_attribute("#pdf-view", "data-highlight") in ("passage", "page")
    assert page.locator("#pdf-page .textLayer span").count() > 0
    assert page.inner_text("#pdf-page-label").startswith(f"Page {chunk.page} of ")

    watch.visit(f"{base}/chat/", "#ask")
    page.select_option("select[name=collections]", label="Sieges")
    page.fill("textarea[name=question]", "What happened at the siege of Vicksburg?")
    page.click("#ask button[type=submit]")
    page.wait_for_selector(".turn .answer a.citation", timeout=120_000)
    watch.collect()

    watch.visit(f"{base}/accounts/tokens/", "#new-token-form")
    page.fill("#new-token-form input[name=name]", "laptop")
    page.click("#new-token-form button[type=submit]")
    page.click("#new-secret")
    selected = page.evaluate(
        "(() => { const e = document.getElementById('new-secret'); "
        "return e.selectionEnd - e.selectionStart; })()"
    )
    assert selected == len(page.input_value("#new-secret"))
    watch.collect()
    for path in ("/marketplace/", "/profiles/", "/accounts/password/change/", "/collections/"):
        watch.visit(base + path)
    watch.visit(f"{base}/api/v1/docs/", ".swagger-ui .opblock")

    django_user_model.objects.create_superuser("operator", "op@example.com", "pw-operator")
    page.context.clear_cookies()
    watch.visit(f"{base}/admin/login/", "#login-form")
    page.fill("input[name=username]", "operator")
    page.fill("input[name=password]", "pw-operator")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
    for path in (
        "/admin/",
        "/admin/knowledge/document/",
        "/admin/knowledge/document/add/",
        f"/admin/knowledge/document/{document.pk}/change/",
        f"/admin/knowledge/collection/{document.collection_id}/change/",
        f"/admin/auth/user/{alice.pk}/change/",
        "/admin/knowledge/knowledgesetting/",
        "/admin/knowledge/ratedanswer/",
    ):
        watch.visit(base + path, "#content")
    watch.assert_strict_and_clean()
