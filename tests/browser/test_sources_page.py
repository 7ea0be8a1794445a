"""Sources on the collection page, in a real headless Chromium: add a web site with a preview, and
watch a sync's progress and outcome while it runs (a real HTTP server on 127.0.0.1, slowed down)."""

from __future__ import annotations

import http.server
import threading
import time

import pytest
from django.db import connection

from knowledge.models import Source
from knowledge.services.collections import collection_create
from knowledge.services.sources import source_sync
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import SIZES, signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
chromium = test_pages_ux.chromium  # one Chromium for the module
PAGES = 12


class SlowSite(http.server.BaseHTTPRequestHandler):
    """A home page linking to PAGES pages; each page takes a moment, so a sync lasts a few seconds."""

    def do_GET(self):  # noqa: N802 (the standard library's name)
        if self.path == "/robots.txt":
            body, status = b"", 404
        elif self.path == "/docs/":
            links = "".join(f'<a href="/docs/page-{n}.html">Page {n}</a>' for n in range(PAGES))
            body, status = (
                f"<html><body><h1>Handbook</h1><p>Start here.</p>{links}</body></html>".encode(),
                200,
            )
        elif self.path.startswith("/docs/page-"):
            time.sleep(0.4)
            number = self.path.removeprefix("/docs/page-").removesuffix(".html")
            text = f"Page {number} of the handbook explains topic number {number} in a few plain words."
            body, status = f"<html><body><h1>Topic {number}</h1><p>{text}</p></body></html>".encode(), 200
        else:
            body, status = b"", 404
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def sync_in_a_thread(source) -> None:
    """A sync as a worker runs it, beside the page; the thread's own connection is closed after it."""
    try:
        source_sync(source=source, trigger="test")
    finally:
        connection.close()


@pytest.fixture
def slow_site(settings):
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.0/8"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowSite)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/docs/"
    server.shutdown()


def test_add_a_site_with_a_preview_and_watch_its_sync_progress(
    chromium, live_server, slow_site, alice, tmp_path
):
    collection = collection_create(name="Handbook", owner=alice)
    page = signed_in(chromium, live_server.url, "alice", SIZES["desktop"])
    page.goto(f"{live_server.url}/collections/{collection.pk}/")
    page.click("#collection-sources > summary")  # a named section, closed on a first visit
    page.click("#add-source > summary")
    page.fill("#add-source-form input[name=location]", slow_site)
    page.click("#preview-source")
    page.wait_for_selector("#source-preview li")
    previewed = page.locator("#source-preview li").all_inner_texts()
    assert previewed[0] == slow_site and f"{slow_site}page-0.html" in previewed
    assert not Source.objects.exists()  # a preview stores nothing

    # Added here, the first sync runs in the request (the test settings run tasks inline); a second
    # tab, already open, shows it while it runs.
    watcher = signed_in(chromium, live_server.url, "alice", SIZES["desktop"])
    page.click("#add-source-form button[type=submit]")  # runs until the sync is over
    page.wait_for_selector("#collection-sources [data-source]")
    source = Source.objects.get(collection=collection)
    first = page.locator(f'[data-source="{source.pk}"] [data-role="state"]').inner_text()
    assert f"{PAGES + 1} added" in first and "0 failed" in first
    watcher.goto(f"{live_server.url}/collections/{collection.pk}/")
    watcher.click("#collection-sources > summary")
    syncing = threading.Thread(target=sync_in_a_thread, args=(source,))
    source.syncs.all().delete()
    syncing.start()
    row = watcher.locator(f'[data-source="{source.pk}"]')
    row.locator('[data-role="stage"]').filter(has_text="reading http://127.0.0.1").wait_for(timeout=20_000)
    assert "syncing" in row.locator('[data-role="state"]').inner_text()
    syncing.join(timeout=120)
    row.locator('[data-role="state"]').filter(has_text="synced").wait_for(timeout=20_000)
    assert "unchanged" in row.locator('[data-role="state"]').inner_text()
    watcher.screenshot(path=str(tmp_path / "sources-synced.png"))
    page.context.close()
    watcher.context.close()
