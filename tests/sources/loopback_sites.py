"""Sites served for real on 127.0.0.1 for the preview's tests: a quick one, a sluggish one, one that holds
its page until the test lets it go, and one that drips a byte every few seconds; each counts what it was
asked, so a test waits on what the site has seen instead of sleeping."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from collections.abc import Callable, Iterator

CHILD_SITEMAPS = 40


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):  # noqa: N802 (the standard library's name)
        site: LoopbackSite = self.server.site
        site.arrived(self.path)
        if self.path == "/robots.txt":
            return self._send(404, b"", "text/plain")
        if site.mode == "gated" and self.path.startswith("/docs/"):
            site.gate.wait(timeout=60)
        body, content_type = _body(self.path, site)
        return self._send(200 if body is not None else 404, body or b"", content_type)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.server.site.mode == "sluggish":
            self._trickle(body)
        else:
            self.wfile.write(body)

    def _trickle(self, body: bytes) -> None:
        """The whole body in four parts over SLUGGISH seconds: each response well within the fetcher's own
        timeouts, a few of them together past a preview's deadline."""
        step = max(1, len(body) // 4)
        for start in range(0, len(body), step):
            time.sleep(LoopbackSite.SLUGGISH / 4)
            self.wfile.write(body[start : start + step])
            self.wfile.flush()

    def log_message(self, *args):
        pass


def _body(path: str, site: LoopbackSite) -> tuple[bytes | None, str]:
    if path == "/docs/":
        links = "".join(f'<a href="/docs/page-{n}.html">Page {n}</a>' for n in range(3))
        return f"<html><body><h1>Handbook</h1>{links}</body></html>".encode(), "text/html"
    if path.startswith("/docs/page-"):
        return b"<html><body><h1>A page</h1></body></html>", "text/html"
    if path == "/index.xml":
        children = "".join(
            f"<sitemap><loc>{site.url}/maps/{n}.xml</loc></sitemap>" for n in range(site.child_sitemaps)
        )
        return _xml("sitemapindex", children), "application/xml"
    if path.startswith("/maps/"):
        number = path.removeprefix("/maps/").removesuffix(".xml")
        return _xml("urlset", f"<url><loc>{site.url}/docs/map-{number}.html</loc></url>"), "application/xml"
    return None, "text/plain"


def _xml(root: str, inner: str) -> bytes:
    return f'<?xml version="1.0"?><{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{inner}</{root}>'.encode()


class LoopbackSite:
    """A small site: /docs/ links to three pages; /index.xml is a sitemap index of ``child_sitemaps``
    sitemaps. ``mode``: "quick"; "sluggish" (every response takes SLUGGISH seconds); "gated" (the pages
    under /docs/ wait for ``gate``)."""

    SLUGGISH = 0.8

    def __init__(self, mode: str = "quick", child_sitemaps: int = CHILD_SITEMAPS):
        self.mode, self.child_sitemaps = mode, child_sitemaps
        self.gate = threading.Event()
        self.requests: list[str] = []
        self._seen = threading.Condition()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.site = self
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def arrived(self, path: str) -> None:
        with self._seen:
            self.requests.append(path)
            self._seen.notify_all()

    def wait_for(self, count: int, path_prefix: str, seconds: float = 30) -> None:
        """Until ``count`` requests for paths under ``path_prefix`` have arrived."""
        with self._seen:
            if not self._seen.wait_for(lambda: len(self.asked(path_prefix)) >= count, timeout=seconds):
                raise AssertionError(
                    f"the site saw {self.asked(path_prefix)}, not {count} under {path_prefix}"
                )

    def asked(self, path_prefix: str) -> list[str]:
        return [path for path in self.requests if path.startswith(path_prefix)]

    def close(self) -> None:
        self.gate.set()
        self._server.shutdown()
        self._server.server_close()


class DripSite:
    """Answers every request one byte at a time, a byte every ``interval`` seconds, for as long as the
    client stays: what an attacker serves to keep the server's fetches waiting. Counts its connections."""

    RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000

    def __init__(self, interval: float):
        self.interval = interval
        self.connections = 0
        self._seen = threading.Condition()
        self._open: list[socket.socket] = []
        self._closing = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def wait_for_connections(self, count: int, seconds: float) -> bool:
        with self._seen:
            return self._seen.wait_for(lambda: self.connections >= count, timeout=seconds)

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._seen:
                self.connections += 1
                self._open.append(client)
                self._seen.notify_all()
            threading.Thread(target=self._drip, args=(client,), daemon=True).start()

    def _drip(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            client.recv(65536)  # the request; its content does not matter
            for byte in self.RESPONSE:
                if self._closing.wait(self.interval):
                    return
                client.sendall(bytes([byte]))

    def close(self) -> None:
        self._closing.set()
        self._listener.close()
        with self._seen:
            for client in self._open:
                with contextlib.suppress(OSError):
                    client.close()


@contextlib.contextmanager
def serving(site_factory: Callable[[], LoopbackSite | DripSite]) -> Iterator:
    site = site_factory()
    try:
        yield site
    finally:
        site.close()
