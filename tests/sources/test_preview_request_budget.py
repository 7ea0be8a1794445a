"""A preview whose requests run out while it reads a sitemap index says so, instead of listing nothing.

The preview's requests (robots.txt, the index, its sitemaps, each redirect hop) come from one budget.
Sitemaps that redirect several times each use it up before any page is listed; the preview then
answered as if the site had no pages.
"""

from __future__ import annotations

import http.server
import threading

import pytest

from knowledge.models import Source
from knowledge.source_fetch.items import SourceReadError
from knowledge.source_fetch.readers import preview_items
from knowledge.source_fetch.web_reader import PREVIEW_REQUESTS
from tests.served import LoopbackHandler

pytestmark = [pytest.mark.django_db, pytest.mark.security]

REDIRECTS_PER_SITEMAP = 4


class RedirectingSitemaps(LoopbackHandler):
    def do_GET(self):  # noqa: N802 (the standard library's name)
        path, _, hops = self.path.partition("?hop=")
        if path == "/robots.txt":
            return self.send_body(404, b"", "text/plain")
        if path == "/index.xml":
            locations = "".join(f"<sitemap><loc>{self.base}/s{n}.xml</loc></sitemap>" for n in range(5))
            return self.send_body(
                200, f"<sitemapindex>{locations}</sitemapindex>".encode(), "application/xml"
            )
        hop = int(hops or 0)
        if hop < REDIRECTS_PER_SITEMAP:
            self.send_response(302)
            self.send_header("Location", f"{path}?hop={hop + 1}")
            self.send_header("Content-Length", "0")
            return self.end_headers()
        page = f"<urlset><url><loc>{self.base}/page{path}.html</loc></url></urlset>"
        return self.send_body(200, page.encode(), "application/xml")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def site(settings):
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.1/32"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RedirectingSitemaps)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_preview_out_of_requests_in_the_sitemaps_says_why(site, alice):
    assert (REDIRECTS_PER_SITEMAP + 1) * 3 + 2 > PREVIEW_REQUESTS  # three sitemaps cost more than it has
    draft = Source(kind=Source.Kind.WEB, location=f"{site}/index.xml")

    with pytest.raises(SourceReadError) as refused:
        preview_items(draft)

    assert "requests allowed were all made" in str(refused.value)
