"""One user's long work never holds back another user's upload.

`make run` with one document worker (KNOWLEDGE_WORKERS=1): a web source whose site answers
each page slowly keeps its sync busy for about ten minutes. Before, the sync ran on the only
worker and another user's one-line upload waited for it; now syncs run on the long-work
queue's own worker (knowledge.task_queues), and the upload is ready within seconds.
"""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from tests.served import LoopbackHandler, free_port
from tests.workers.test_worker_faults import RunningProduct, _document_status, _upload

pytestmark = [pytest.mark.slow, pytest.mark.security]

PAGES = 200
SECONDS_PER_PAGE = 3.0  # 200 pages, 3 s each: a ten-minute sync
READY_WITHIN = 30.0


class SlowSite(http.server.ThreadingHTTPServer):
    """A start page linking to PAGES pages, each answered after SECONDS_PER_PAGE."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", free_port()), _SlowPage)
        self.pages_asked = 0
        self.asked = threading.Condition()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def wait_for_pages(self, count: int, seconds: float) -> bool:
        with self.asked:
            return self.asked.wait_for(lambda: self.pages_asked >= count, timeout=seconds)


class _SlowPage(LoopbackHandler):
    def do_GET(self):  # noqa: N802 (the standard library's name)
        if self.path == "/robots.txt":
            return self.send_body(404, b"")
        if self.path == "/":
            links = "".join(f'<a href="/p{n}.html">page {n}</a> ' for n in range(PAGES))
            return self.send_body(200, f"<html><body><h1>Start</h1>{links}</body></html>".encode())
        with self.server.asked:
            self.server.pages_asked += 1
            self.server.asked.notify_all()
        time.sleep(SECONDS_PER_PAGE)  # the site's slowness, not a decision of the test
        self.send_body(200, f"<html><body><h1>{self.path}</h1><p>Slow text.</p></body></html>".encode())


@pytest.fixture
def slow_site():
    site = SlowSite()
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        site.shutdown()
        site.server_close()


@pytest.fixture
def product(tmp_path):
    running = RunningProduct(
        tmp_path, KNOWLEDGE_WORKERS="1", KNOWLEDGE_SOURCES_ALLOWED_NETWORKS="127.0.0.0/8"
    )
    try:
        running.wait_healthy(300)
        yield running
    finally:
        running.kill_everything()


FOLLOW_THE_SITE = """
from django.contrib.auth import get_user_model
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_sync_queue
alice = get_user_model().objects.create_user("alice", password="pw-alice")
collection = collection_create(name="slow site", owner=alice)
source = source_add(collection=collection, spec=SourceSpec(location="{url}", kind="web"), user=alice)
source_sync_queue(source=source, trigger="page", first=True)
"""


def test_another_users_upload_is_ready_within_seconds_while_a_long_sync_runs(product, slow_site, tmp_path):
    product.manage("shell", "-c", FOLLOW_THE_SITE.format(url=slow_site.url))
    assert slow_site.wait_for_pages(2, 120), product.output()  # the sync is reading the site

    asked = time.monotonic()
    document_id = _upload(product, tmp_path)
    while time.monotonic() - asked < READY_WITHIN and _document_status(product, document_id) != "ready":
        time.sleep(0.5)
    waited = time.monotonic() - asked

    assert _document_status(product, document_id) == "ready", (waited, product.output())
    running = product.sql("SELECT count(*) FROM knowledge_sourcesync WHERE status = 'running'")[0][0]
    assert running == 1, product.output()  # the long sync was still going: it did not have to end first
    assert slow_site.pages_asked < PAGES
