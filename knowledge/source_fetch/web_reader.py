"""A web source's reader: the pages of a site from its start URL or its sitemap, within one budget.

A page is asked for with its ETag and Last-Modified (a 304 is unchanged); every request a sync or a
preview makes comes from one ``FetchBudget`` with a deadline (knowledge.source_fetch.budget).
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterator
from urllib.parse import urldefrag, urljoin, urlsplit

from django.conf import settings

from knowledge.models import Source, SourceItem
from knowledge.source_fetch.budget import BudgetExhausted, FetchBudget
from knowledge.source_fetch.items import Listed, SourceReadError, item_filename
from knowledge.source_fetch.robots import RobotsRules
from knowledge.source_fetch.web import (
    FetchFailed,
    FetchPolicy,
    FetchRefused,
    WebFetcher,
    parse_networks,
    url_checked,
)

# A page's links are followed to this depth from the start URL unless the source says otherwise.
DEFAULT_MAX_DEPTH = 3
# Sitemap indexes nest; a sitemap of sitemaps of sitemaps is enough.
MAX_SITEMAP_DEPTH = 3
# Requests a web sync may make: two a page (a redirect each) and these for robots.txt, the start URL
# and sitemaps, all from one budget; a sitemap index nested to the depth above multiplied them.
REQUESTS_PER_PAGE = 2
REQUEST_ALLOWANCE = 20
# Seconds kept between a sync's deadline and its task's timeout, to write the sync's record.
DEADLINE_MARGIN_S = 60
_HTML_TYPES = ("text/html", "application/xhtml+xml")
# -- preview limits --------------------------------------------------------------------------------------

# Items a preview lists.
PREVIEW_ITEMS = 50
# Sitemaps a preview of a sitemap index reads: its requests stay a handful (with robots.txt and the
# index), whatever the index lists.
PREVIEW_SITEMAPS = 3
# Requests a preview may make: robots.txt, the start page and PREVIEW_SITEMAPS sitemaps, each with a
# redirect or two.
PREVIEW_REQUESTS = 3 * (2 + PREVIEW_SITEMAPS)


def fetch_policy() -> FetchPolicy:
    try:
        networks = parse_networks(settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS)
    except ValueError as exc:
        raise SourceReadError(f"KNOWLEDGE_SOURCES_ALLOWED_NETWORKS: {exc}") from exc
    return FetchPolicy(
        allowed_networks=networks,
        max_bytes=settings.KNOWLEDGE_SOURCES_MAX_RESPONSE_MB * 1024 * 1024,
        requests_per_second_per_host=float(settings.KNOWLEDGE_SOURCES_REQUESTS_PER_SECOND),
    )


def sync_budget(max_pages: int) -> FetchBudget:
    """Every request of one web sync (robots.txt, sitemaps, pages, redirects) and its time."""
    return FetchBudget(
        max_requests=REQUESTS_PER_PAGE * max_pages + REQUEST_ALLOWANCE,
        seconds=sync_seconds(),
        requests_limit=(
            f"{REQUESTS_PER_PAGE} a page of KNOWLEDGE_SOURCES_MAX_PAGES or the source's max_pages, "
            f"and {REQUEST_ALLOWANCE} more"
        ),
        time_limit="KNOWLEDGE_SOURCES_SYNC_SECONDS",
    )


def sync_seconds() -> float:
    """KNOWLEDGE_SOURCES_SYNC_SECONDS, within the task timeout: a sync the worker kills records nothing."""
    task_timeout = settings.Q_CLUSTER["timeout"]
    margin = min(DEADLINE_MARGIN_S, task_timeout / 2)
    return min(settings.KNOWLEDGE_SOURCES_SYNC_SECONDS, task_timeout - margin)


class WebReader:
    """A site from its start URL (links followed within its host and path prefix, to a depth) or from
    its sitemap (the pages it lists). robots.txt is obeyed; at most KNOWLEDGE_SOURCES_MAX_PAGES, and
    every request comes from one ``budget`` (by default the sync's: ``sync_budget``)."""

    def __init__(
        self, source: Source, known: dict[str, SourceItem], budget: FetchBudget | None = None
    ) -> None:
        self.source, self.known = source, known
        options = source.options or {}
        start = urlsplit(source.location)
        self.host = start.netloc
        self.prefix = options.get("path_prefix") or _folder_of(start.path)
        self.max_depth = int(options.get("max_depth", DEFAULT_MAX_DEPTH))
        self.max_pages = min(int(options.get("max_pages", settings.KNOWLEDGE_SOURCES_MAX_PAGES)),
                             settings.KNOWLEDGE_SOURCES_MAX_PAGES)  # fmt: skip
        self.budget = budget or sync_budget(self.max_pages)
        self.fetcher = WebFetcher(fetch_policy(), budget=self.budget)
        self.sitemaps_left = math.inf  # child sitemaps this reader may still fetch (a preview reads few)
        self.sitemaps_skipped = False  # an index listed more than that
        self.complete = True  # every page was listed (so the known ones not listed are gone)
        self.cursor = ""
        self.notes: list[str] = []  # why the listing stopped short, for the sync's record

    def items(self) -> Iterator[Listed]:
        robots, first = self._start()
        if _is_sitemap(first.body):
            yield from self._pages(self._sitemap_urls(first.body), robots, crawl=False)
        else:  # the start page is read once: the answer that told it is not a sitemap
            yield from self._pages(
                [self.source.location], robots, crawl=True, fetched={self.source.location: first}
            )

    def preview(self) -> tuple[list[str], str]:
        """The start page and the pages it links to (or the sitemap's), as the sync would take them;
        of a sitemap index, the pages of its first PREVIEW_SITEMAPS sitemaps."""
        self.sitemaps_left = PREVIEW_SITEMAPS
        try:
            robots, first = self._start()
            sitemap = _is_sitemap(first.body)
            candidates = (
                self._sitemap_urls(first.body)
                if sitemap
                else [self.source.location, *_links(first.body, first.url)]
            )
        except SourceReadError as exc:
            if self._out_of_time():
                raise self._too_slow() from exc
            raise
        if self._out_of_time():  # the sitemaps' reading stopped at the deadline: the list is short
            raise self._too_slow()
        if not candidates and self.notes:  # the sitemaps' reading stopped short: say why, not "nothing"
            raise SourceReadError(f"{self.source.location}: {self.notes[0]}")
        urls = list(dict.fromkeys(u for u in candidates if self._inside(u) and robots.allows(u)))
        return urls[:PREVIEW_ITEMS], self._preview_note(len(urls), sitemap)

    def _out_of_time(self) -> bool:
        return self.budget.seconds_left() <= 0

    def _too_slow(self) -> SourceReadError:
        return SourceReadError(
            f"{self.source.location} answered too slowly: a preview waits at most "
            f"{self.budget.seconds:g} s for the site, robots.txt and sitemaps included"
        )

    def _preview_note(self, count: int, sitemap: bool) -> str:
        if self.sitemaps_skipped:
            return "and the pages of the other sitemaps, which the preview does not read"
        more = count > PREVIEW_ITEMS or (not sitemap and self.max_depth > 1)
        return "and the pages they link to, to a depth" if more else ""

    def _start(self):
        """The site's robots.txt rules and its start page (or sitemap); refused, the whole sync is."""
        try:
            robots = RobotsRules.fetch(self.fetcher, self.source.location)
            first = self.fetcher.get(self.source.location)
        except (FetchRefused, FetchFailed) as exc:
            raise SourceReadError(f"{self.source.location} could not be read: {exc.reason}") from exc
        if first.status != 200:
            # Nothing listed: every page would be taken for removed.
            raise SourceReadError(f"{self.source.location} answered HTTP {first.status}; nothing was changed")
        return robots, first

    def _pages(
        self, urls: list[str], robots: RobotsRules, *, crawl: bool, fetched: dict | None = None
    ) -> Iterator[Listed]:
        fetched = fetched or {}
        queue = deque((url, 0) for url in urls)
        seen: set[str] = set()
        while queue:
            url, depth = queue.popleft()
            if url in seen or not self._inside(url) or not robots.allows(url):
                continue
            if len(seen) >= self.max_pages:
                self._stop(f"stopped after {self.max_pages} pages (KNOWLEDGE_SOURCES_MAX_PAGES or the "
                           "source's max_pages)")  # fmt: skip
                return
            try:
                listed, html = self._page(url, crawl=crawl, result=fetched.get(url))
            except BudgetExhausted as exc:
                self._stop(f"stopped after {len(seen)} pages: {exc.reason}")
                return
            seen.add(url)
            if listed.error and crawl:
                self.complete = False  # the pages below it were not reached: none may be taken for gone
            yield listed
            if crawl and html and depth < self.max_depth:
                queue.extend((link, depth + 1) for link in _links(html, url))

    def _stop(self, reason: str) -> None:
        self.complete = False  # the rest was not looked at: nothing may be taken for gone
        self.notes.append(f"{reason}; the other pages were not read, and none was taken for removed")

    def _page(self, url: str, *, crawl: bool, result=None) -> tuple[Listed, bytes | None]:
        """The page as listed, and its HTML for its links when crawling (the stored copy when it is
        unchanged). ``result``: the page as already fetched."""
        item = self.known.get(url)
        try:
            result = result or self.fetcher.get(
                url, etag=item.etag if item else "", last_modified=item.last_modified if item else ""
            )
        except BudgetExhausted:
            raise  # the whole sync stops
        except (FetchRefused, FetchFailed) as exc:  # this page fails; the sync goes on
            return Listed(url, url, error=exc.reason), None
        if result.not_modified and item is not None:
            listed = Listed(url, url, etag=item.etag, last_modified=item.last_modified)
            return listed, _stored(item) if crawl else None
        if result.status != 200:
            return Listed(url, url, error=f"HTTP {result.status}"), None
        html = result.content_type.split(";")[0].strip().lower() in _HTML_TYPES
        listed = Listed(
            key=url,
            origin_url=result.url,
            filename=item_filename(self.source.pk, url, _web_filename(url, html)),
            data=result.body,
            etag=result.etag,
            last_modified=result.last_modified,
        )
        return listed, result.body if html else None

    def _inside(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            parts.scheme in ("http", "https")
            and parts.netloc == self.host
            and parts.path.startswith(self.prefix)
        )

    def _sitemap_urls(self, body: bytes) -> list[str]:
        """The pages a sitemap lists, with those of the sitemaps its index names (breadth first, to
        MAX_SITEMAP_DEPTH, each once). Reading stops once the sync has as many pages as it may read."""
        if not _is_sitemap_index(body):
            return _sitemap_locations(body)
        urls: list[str] = []
        pending = deque((location, 1) for location in _sitemap_locations(body))
        read: set[str] = set()
        while pending and len(urls) < self.max_pages and not self._sitemaps_spent():
            location, depth = pending.popleft()
            if location in read:
                continue
            read.add(location)
            self.sitemaps_left -= 1
            try:
                pages, sitemaps = self._child_sitemap(location)
            except BudgetExhausted as exc:
                self._stop(f"stopped while reading the sitemaps: {exc.reason}")
                return []  # no request is left for the pages
            urls += pages
            if depth < MAX_SITEMAP_DEPTH:
                pending.extend((child, depth + 1) for child in sitemaps)
            elif sitemaps:
                self.complete = False  # nested too deep: its pages are not listed
        if pending:
            self.complete = False  # sitemaps not read: their pages may be there still
        return urls

    def _sitemaps_spent(self) -> bool:
        if self.sitemaps_left > 0:
            return False
        self.sitemaps_skipped = True  # the pages of the sitemaps left are not listed
        return True

    def _child_sitemap(self, location: str) -> tuple[list[str], list[str]]:
        """(pages, sitemaps) a sitemap of an index lists; one that cannot be read lists none (noted)."""
        try:
            result = self.fetcher.get(location)
            if result.status != 200:
                raise SourceReadError(f"it answered HTTP {result.status}")
            locations = _sitemap_locations(result.body)
        except BudgetExhausted:
            raise
        except (FetchRefused, FetchFailed, SourceReadError) as exc:
            self.complete = False  # its pages are not listed: none may be taken for gone
            self.notes.append(f"the sitemap {location} was not read ({getattr(exc, 'reason', exc)}); "
                              "none of the pages it lists was taken for removed")  # fmt: skip
            return [], []
        return ([], locations) if _is_sitemap_index(result.body) else (locations, [])


def _folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] + "/" if "/" in path else "/"


def _stored(item: SourceItem) -> bytes | None:
    document = item.document
    if document is None or not document.file:
        return None
    with document.file.open("rb") as stored:
        return stored.read()


def _links(html: bytes, base: str) -> list[str]:
    import lxml.html

    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    links = []
    for href in tree.xpath("//a/@href"):
        url, _fragment = urldefrag(urljoin(base, href.strip()))
        links.append(url)
    return links


_SITEMAP_START = re.compile(
    rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:\w+:)?(urlset|sitemapindex)\b", re.S
)


def _is_sitemap(body: bytes) -> bool:
    return bool(_SITEMAP_START.match(body[:2000]))


def _is_sitemap_index(body: bytes) -> bool:
    match = _SITEMAP_START.match(body[:2000])
    return bool(match and match.group(1) == b"sitemapindex")


def _sitemap_locations(body: bytes) -> list[str]:
    """The <loc> of a sitemap; defusedxml refuses entities and DTDs (a billion laughs)."""
    from defusedxml import ElementTree

    try:
        root = ElementTree.fromstring(body)
    except Exception as exc:  # defusedxml's refusals and XML syntax errors alike
        raise SourceReadError(f"the sitemap could not be read ({exc})") from exc
    return [element.text.strip() for element in root.iter() if element.tag.endswith("loc") and element.text]


def _web_filename(url: str, html: bool) -> str:
    """A document name that says where the page is and keeps the pages of one site apart:
    "docs.example.org_guide_install.html"."""
    parts = urlsplit(url)
    path = parts.path.strip("/") or "index"
    name = f"{parts.netloc}_{path}".replace("/", "_")
    if parts.query:
        name += "_" + re.sub(r"[^\w.-]+", "_", parts.query)[:40]
    if html and not name.lower().endswith((".html", ".htm")):
        name += ".html"
    return name


def web_url_checked(url: str) -> None:
    """A web source's address, refused now as its first sync would refuse it (an internal address).
    A name that does not resolve now is let through: DNS may be down for a moment, and every sync
    checks it again."""
    try:
        url_checked(url, fetch_policy().allowed_networks)
    except FetchRefused as exc:
        raise SourceReadError(exc.reason) from exc
    except FetchFailed:
        pass


def preview_budget() -> FetchBudget:
    """A preview's requests (robots.txt, the start page, its sitemaps, their redirects) and time."""
    return FetchBudget(
        max_requests=PREVIEW_REQUESTS,
        seconds=settings.KNOWLEDGE_SOURCES_PREVIEW_SECONDS,
        time_limit="KNOWLEDGE_SOURCES_PREVIEW_SECONDS",
    )
