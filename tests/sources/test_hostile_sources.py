"""A source is a way to make the server fetch things: hostile sites, served for real on 127.0.0.1."""

from __future__ import annotations

import http.server
import threading

import pytest

from config.base.errors import KnowledgeError
from knowledge.models import Source, SourceItem
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_sync

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

PAGE = b"<html><body><h1>%s</h1><p>A page of a site that tries its luck with the sync.</p>%s</body></html>"


class HostileSite(http.server.BaseHTTPRequestHandler):
    """/ links to every trap; each trap misbehaves in its own way; /endless/N links to /endless/N+1."""

    def do_GET(self):  # noqa: N802 (the standard library's name)
        path = self.path
        if path == "/robots.txt":
            return self._send(404, b"")
        if path == "/":
            links = b"".join(
                b'<a href="%s">%s</a>' % (p, p)
                for p in (
                    b"/metadata",
                    b"/private",
                    b"/loopback",
                    b"/huge",
                    b"/redirects/0",
                    b"/endless/0",
                    b"/ok",
                )
            )
            return self._send(200, PAGE % (b"Home", links))
        if path == "/metadata":
            return self._redirect("http://169.254.169.254/latest/meta-data/")
        if path == "/private":
            return self._redirect("http://10.0.0.1/admin")
        if path == "/loopback":
            return self._redirect(f"http://localhost:{self.server.server_address[1]}/ok")
        if path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(2 * 1024**3))
            self.end_headers()
            return self._drip_forever()
        if path.startswith("/redirects/"):
            return self._redirect(f"/redirects/{int(path.rsplit('/', 1)[1]) + 1}")
        if path.startswith("/endless/"):
            n = int(path.rsplit("/", 1)[1])
            return self._send(200, PAGE % (b"Page %d" % n, b'<a href="/endless/%d">next</a>' % (n + 1)))
        if path == "/ok":
            return self._send(200, PAGE % (b"Fine", b""))
        return self._send(404, b"")

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _drip_forever(self) -> None:
        try:
            while True:
                self.wfile.write(b"x" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile_site(settings):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HostileSite)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # The site itself is on 127.0.0.1: the operator allows that address only (not "localhost" by name
    # either: it resolves to 127.0.0.1 too, so it is allowed; the traps use other addresses).
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.1/32"
    settings.KNOWLEDGE_SOURCES_MAX_PAGES = 20
    settings.KNOWLEDGE_SOURCES_MAX_RESPONSE_MB = 1
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_every_trap_is_stopped_with_its_reason_and_the_rest_of_the_sync_goes_on(hostile_site, alice):
    collection = collection_create(name="hostile", owner=alice)
    source = source_add(
        collection=collection,
        spec=SourceSpec(location=f"{hostile_site}/", options={"max_depth": 30}),
        user=alice,
    )
    run = source_sync(source=source, trigger="test", wait=True)
    assert run.status == "succeeded", run.error
    reasons = {error["item"].removeprefix(hostile_site): error["reason"] for error in run.errors}
    assert "cloud metadata address" in reasons["/metadata"]
    assert "10.0.0.1" in reasons["/private"] and "private address" in reasons["/private"]
    assert "KNOWLEDGE_SOURCES_ALLOWED_NETWORKS" in reasons["/private"]
    assert "larger than 1 MB" in reasons["/huge"]
    assert "more than 5 redirects" in reasons["/redirects/0"]
    # The endless chain of pages stops at the page limit, said in the sync's record; the good pages were read.
    assert SourceItem.objects.filter(source=source).count() == 20
    assert "stopped after 20 pages (KNOWLEDGE_SOURCES_MAX_PAGES" in reasons["/"]
    assert SourceItem.objects.filter(source=source, key=f"{hostile_site}/ok", error="").exists()
    assert run.added >= 2


def test_a_source_on_a_loopback_name_is_refused_when_loopback_is_not_allowed(hostile_site, settings, alice):
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = ""
    collection = collection_create(name="loopback", owner=alice)
    port = hostile_site.rsplit(":", 1)[1]
    location = f"http://localhost:{port}/"
    with pytest.raises(KnowledgeError, match="the address 127.0.0.1 of localhost is a loopback address"):
        source_add(collection=collection, spec=SourceSpec(location=location), user=alice)
    # Added while the name pointed elsewhere (DNS answers change): each sync checks it again.
    source = Source.objects.create(collection=collection, kind="web", location=location)
    run = source_sync(source=source, trigger="test", wait=True)
    assert run.status == "failed"
    assert "loopback address" in run.error and "KNOWLEDGE_SOURCES_ALLOWED_NETWORKS" in run.error
    assert not SourceItem.objects.filter(source=source).exists()


class ChainSite(http.server.BaseHTTPRequestHandler):
    """/ links to /a.html, which links to /b.html; /a.html answers 503 once ``broken`` is set."""

    broken = False

    def do_GET(self):  # noqa: N802 (the standard library's name)
        pages = {
            "/": PAGE % (b"Home", b'<a href="/a.html">a</a>'),
            "/a.html": PAGE % (b"A", b'<a href="/b.html">b</a>'),
            "/b.html": PAGE % (b"B", b""),
        }
        status = 503 if self.path == "/a.html" and ChainSite.broken else 200 if self.path in pages else 404
        body = pages.get(self.path, b"") if status == 200 else b""
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_page_that_fails_hides_the_pages_below_it_and_none_of_them_is_removed(settings, alice):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ChainSite)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.1/32"
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        collection = collection_create(name="chain", owner=alice)
        source = source_add(
            collection=collection, spec=SourceSpec(location=f"{base}/", grace_hours=0), user=alice
        )
        assert source_sync(source=source, trigger="test", wait=True).added == 3
        ChainSite.broken = True
        run = source_sync(source=source, trigger="test", wait=True)
        assert (run.failed, run.deleted) == (1, 0), run.errors
        assert "HTTP 503" in run.errors[0]["reason"]
        assert SourceItem.objects.filter(source=source, key=f"{base}/b.html", document__isnull=False).exists()
    finally:
        ChainSite.broken = False
        server.shutdown()
