"""A web sync's requests and time are bounded as a whole: sitemap indexes nested to the depth a sync
follows, a wide index, and a page that never ends, served for real on 127.0.0.1; the server counts what
it is asked."""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from knowledge.models import SourceItem
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_sync
from tests.served import LoopbackHandler

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

PAGE = (
    b"<html><body><h1>Page %s</h1><p>One page of a site whose sitemaps nest. The harbour office opens at "
    b"eight, the ferry leaves at nine, and the lighthouse keeper writes the weather on a slate by the "
    b"door every morning, whatever the season.</p></body></html>"
)
FANOUT = 20


def urlset(locations: list[str]) -> bytes:
    urls = "".join(f"<url><loc>{location}</loc></url>" for location in locations)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'.encode()


def sitemap_index(locations: list[str]) -> bytes:
    maps = "".join(f"<sitemap><loc>{location}</loc></sitemap>" for location in locations)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{maps}</sitemapindex>'.encode()


class SitemapSite(LoopbackHandler):
    """/sitemap.xml as the server's ``mode`` says: "flat" (three pages), "maze" (an index of FANOUT
    indexes of FANOUT indexes ..., never a page), "wide" (an index of FANOUT sitemaps of 10 pages each),
    "slow" (four pages, /page/slow dripping a byte at a time until the test ends)."""

    def do_GET(self):  # noqa: N802 (the standard library's name)
        server = self.server
        with server.lock:
            server.paths.append(self.path)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        if self.path == "/robots.txt":
            return self._send(404, b"")
        if self.path == "/sitemap.xml":
            return self._send(200, self._sitemap(base))
        if self.path.startswith("/maze/"):
            return self._send(200, sitemap_index([f"{base}{self.path}/{i}" for i in range(FANOUT)]))
        if self.path.startswith("/wide/"):
            return self._send(200, urlset([f"{base}/page{self.path}-{i}" for i in range(10)]))
        if self.path == "/page/slow" and server.mode == "slow":
            return self._drip()
        if self.path.startswith("/page/"):
            return self._send(200, PAGE % self.path.encode(), "text/html")
        return self._send(404, b"")

    def _sitemap(self, base: str) -> bytes:
        mode = self.server.mode
        if mode == "maze":
            return sitemap_index([f"{base}/maze/{i}" for i in range(FANOUT)])
        if mode == "wide":
            return sitemap_index([f"{base}/wide/{i}" for i in range(FANOUT)])
        return urlset([f"{base}/page/{name}" for name in ("1", "2", "slow", "3")])

    def _drip(self) -> None:
        """A byte every half second, until the test ends: each read is quick, the response endless."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        try:
            while not self.server.released.wait(0.5):
                self.wfile.write(b" ")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, status: int, body: bytes, content_type: str = "application/xml") -> None:
        self.send_body(status, body, content_type)


@pytest.fixture
def sitemap_site(settings):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SitemapSite)
    server.daemon_threads = True
    server.mode, server.paths, server.lock = "flat", [], threading.Lock()
    server.released = threading.Event()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.1/32"
    settings.KNOWLEDGE_SOURCES_REQUESTS_PER_SECOND = 1000  # pacing is not what is measured here
    yield server
    server.released.set()
    server.shutdown()


def asked(server) -> list[str]:
    with server.lock:
        asked, server.paths[:] = list(server.paths), []
    return asked


def site_source(server, alice, **options):
    collection = collection_create(name=f"sitemaps {server.mode}", owner=alice)
    location = f"http://127.0.0.1:{server.server_address[1]}/sitemap.xml"
    return source_add(
        collection=collection, spec=SourceSpec(location=location, options=options, grace_hours=0), user=alice
    )


def test_nested_sitemap_indexes_cost_no_more_requests_than_the_syncs_budget(sitemap_site, alice):
    source = site_source(sitemap_site, alice, max_pages=5)
    first = source_sync(source=source, trigger="test", wait=True)
    assert (first.status, first.added) == ("succeeded", 4), (first.error, first.errors)
    asked(sitemap_site)

    sitemap_site.mode = "maze"
    run = source_sync(source=source, trigger="test", wait=True)
    requests = asked(sitemap_site)
    # Two requests a page (a redirect each) plus 20 for robots.txt, the start URL and sitemaps: with
    # max_pages 5, 30 requests, where the three levels of indexes alone were 5 + 25 + 125.
    assert len(requests) <= 2 * 5 + 20, (len(requests), requests[:40])
    assert run.status == "succeeded", run.error
    reasons = " ".join(error["reason"] for error in run.errors)
    assert "requests" in reasons and "KNOWLEDGE_SOURCES_MAX_PAGES" in reasons, run.errors
    # The listing stopped short: the pages read before stay, none is taken for removed.
    assert run.deleted == 0
    assert SourceItem.objects.filter(source=source, document__isnull=False).count() == 4


def test_a_wide_sitemap_index_is_read_only_as_far_as_the_syncs_pages_need(sitemap_site, alice):
    sitemap_site.mode = "wide"
    source = site_source(sitemap_site, alice, max_pages=5)
    run = source_sync(source=source, trigger="test", wait=True)
    requests = asked(sitemap_site)
    assert (run.status, run.added) == ("succeeded", 5), (run.error, run.errors)
    # robots.txt, the index, the first of its sitemaps (10 pages listed: enough), 5 pages.
    assert len(requests) == 8, requests
    assert "stopped after 5 pages" in " ".join(error["reason"] for error in run.errors)


def test_a_sync_stops_at_its_deadline_and_keeps_what_it_read(sitemap_site, alice, settings):
    source = site_source(sitemap_site, alice)
    first = source_sync(source=source, trigger="test", wait=True)
    assert (first.status, first.added) == ("succeeded", 4), (first.error, first.errors)

    settings.KNOWLEDGE_SOURCES_SYNC_SECONDS = 3
    sitemap_site.mode = "slow"
    started = time.monotonic()
    run = source_sync(source=source, trigger="test", wait=True)
    seconds = time.monotonic() - started
    # One response may take 60 s, each read 20 s (the fetcher's own limits): the sync's deadline cut
    # this one short.
    assert seconds < 15, seconds
    assert run.status == "succeeded", run.error
    reasons = " ".join(error["reason"] for error in run.errors)
    assert "KNOWLEDGE_SOURCES_SYNC_SECONDS" in reasons, run.errors
    assert run.unchanged == 2 and run.deleted == 0, (run.unchanged, run.deleted, run.errors)
    assert SourceItem.objects.filter(source=source, document__isnull=False).count() == 4
