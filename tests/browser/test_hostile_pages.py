"""Hostile content in a real headless Chromium: no script of an upload runs on our origin,
and every page works under a strict Content-Security-Policy without a single violation.
"""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import Error as PlaywrightError
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens import token_create
from knowledge.collections import collection_create
from knowledge.models import Document
from tests.browser.test_journey import browser  # noqa: F401  (the Chromium fixture)

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
    uploader.wait_for_function(
        "document.querySelectorAll('#uploads li .state').length === 3 && "
        "[...document.querySelectorAll('#uploads li .state')]"
        ".every(s => s.textContent.includes('processing'))",
        timeout=120_000,
    )
    _api_upload(bob, collection, "notes", EXTENSIONLESS.encode(), "text/html")
    documents = list(Document.objects.filter(collection=collection))
    assert {d.filename for d in documents} == {"evil.html", "page.md", "pic.txt", "notes"}

    victim = browser.new_context(accept_downloads=True).new_page()
    dialogs: list[str] = []
    victim.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
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
    victim.wait_for_timeout(500)  # a script that had been rendered would have run by now
    assert dialogs == []
    assert not ApiToken.objects.filter(name="pwned").exists()
    assert rendered == []  # every original was a download, never a page of ours showing the upload


def opens_as_download(page, url: str) -> bool:
    """Navigate to ``url``: True when the browser downloads it, False when it renders it."""
    try:
        page.goto(url)
    except PlaywrightError as exc:  # Playwright's way of saying a navigation became a download
        if "Download is starting" not in str(exc):
            raise
        return True
    return False
