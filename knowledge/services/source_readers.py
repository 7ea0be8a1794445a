"""What a source holds now: its items, each either fetched again (changed or new) or known unchanged.

One reader per kind of source. A reader never fetches what it can tell is unchanged: a web page is
asked for with its ETag and Last-Modified (a 304 is unchanged); a Git repository's changes come from
the diff between the last synced commit and the new one; a folder's file is read again only when its
modification time or size moved. The sync (knowledge.services.sources) then compares the content's
hash, so a page served again with the same bytes is unchanged too.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

from django.conf import settings

from config.base.errors import KnowledgeError
from knowledge.clients.fetch_budget import BudgetExhausted, FetchBudget
from knowledge.clients.git_source import (
    GitFailed,
    GitMirror,
    GitPolicy,
    GitRefused,
    check_git_url,
    file_url,
    glob_match,
)
from knowledge.clients.web_fetch import (
    FetchFailed,
    FetchPolicy,
    FetchRefused,
    RobotsRules,
    WebFetcher,
    parse_networks,
    url_checked,
)
from knowledge.models import Source, SourceItem

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


@dataclass
class Listed:
    """One item as the source has it now. ``data`` None: unchanged since the last sync (not fetched)."""

    key: str
    origin_url: str = ""
    filename: str = ""
    data: bytes | None = None
    etag: str = ""
    last_modified: str = ""
    error: str = ""


class SourceReadError(KnowledgeError):
    """The source as a whole could not be read (its start URL refused, its repository not found)."""


def reader_for(source: Source, known: dict[str, SourceItem]):
    return {Source.Kind.WEB: WebReader, Source.Kind.GIT: GitReader, Source.Kind.FOLDER: FolderReader}[
        source.kind
    ](source, known)


# -- web ------------------------------------------------------------------------------------------


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
        """The start page and the pages it links to (or the sitemap's), as the sync would take them."""
        robots, first = self._start()
        if _is_sitemap(first.body):
            candidates = self._sitemap_urls(first.body)
        else:
            candidates = [self.source.location, *_links(first.body, first.url)]
        urls = list(dict.fromkeys(u for u in candidates if self._inside(u) and robots.allows(u)))
        more = len(urls) > PREVIEW_ITEMS or (not _is_sitemap(first.body) and self.max_depth > 1)
        return urls[:PREVIEW_ITEMS], "and the pages they link to, to a depth" if more else ""

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
        while pending and len(urls) < self.max_pages:
            location, depth = pending.popleft()
            if location in read:
                continue
            read.add(location)
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


def item_filename(source_id: int, key: str, readable: str = "") -> str:
    """The document name of one item: readable, and told apart by a short hash of the source and the
    item's key, so that no two items share a name (a new version replaces the document of the same
    name): "a/b.md" and "a_b.md" of one repository, two repositories' README.md, a user's own upload.
    The extension stays last: it chooses between the text formats."""
    readable = readable or key.replace("/", "_")
    tag = hashlib.sha256(f"{source_id}:{key}".encode()).hexdigest()[:8]
    stem, dot, suffix = readable.rpartition(".")
    if not dot or not stem or len(suffix) > 10:
        return f"{readable} ~{tag}"
    return f"{stem} ~{tag}.{suffix}"


# -- git ------------------------------------------------------------------------------------------


def git_policy() -> GitPolicy:
    return GitPolicy(
        allowed_roots=tuple(settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS),
        allowed_networks=fetch_policy().allowed_networks,
    )


class GitReader:
    """A branch's files that match the source's globs; after the first sync, only the diff's."""

    def __init__(self, source: Source, known: dict[str, SourceItem]) -> None:
        self.source, self.known = source, known
        options = source.options or {}
        self.branch = options.get("branch") or "main"
        self.globs = options.get("globs") or ["**/*.md"]
        self.mirror = GitMirror(
            Path(settings.KNOWLEDGE_SOURCES_DIR) / str(source.pk) / "repo.git",
            source.location,
            self.branch,
            git_policy(),
        )
        self.complete = True
        self.cursor = ""
        self.notes: list[str] = []

    def items(self) -> Iterator[Listed]:
        self.cursor = self.mirror.update()
        # Items already gone from the branch stay gone (their grace period runs): never "unchanged".
        present = [key for key, item in self.known.items() if item.gone_since is None]
        previous = self.source.cursor
        if previous and previous == self.cursor:
            yield from (self._unchanged(key) for key in present)
            return
        changes = self._changes(previous)
        files, skipped = self.mirror.files(self.cursor, self.globs)
        if changes is not None:
            changed = set(changes.added) | set(changes.modified)
            gone = set(changes.deleted)
            yield from (self._unchanged(key) for key in present if key not in changed | gone)
            files = [f for f in files if f.path in changed]
        for path, reason in skipped:
            yield Listed(path, error=reason)
        for file in files:
            yield Listed(
                key=file.path,
                origin_url=self._origin(file.path),
                filename=item_filename(self.source.pk, file.path),
                data=self.mirror.read(file.blob_sha),
            )

    def _changes(self, previous: str):
        """The diff since the last synced commit; None (read everything) for a first sync, or when
        that commit is gone (history rewritten) or belongs to another repository or patterns."""
        if not previous:
            return None
        try:
            return self.mirror.changes(previous, self.cursor, self.globs)
        except (GitFailed, GitRefused):
            return None

    def _unchanged(self, key: str) -> Listed:
        return Listed(key, origin_url=self.known[key].origin_url)

    def _origin(self, path: str) -> str:
        return (
            file_url(self.source.location, self.cursor, path)
            or f"{self.source.location}@{self.cursor}:{path}"
        )


# -- folder ---------------------------------------------------------------------------------------

# Files read per sync of a folder.
MAX_FOLDER_FILES = 5000


class FolderReader:
    """The files under a server folder (only under KNOWLEDGE_SOURCES_FOLDER_ROOTS) that match the
    source's globs; a file is read again only when its modification time or size moved."""

    def __init__(self, source: Source, known: dict[str, SourceItem]) -> None:
        self.source, self.known = source, known
        self.root = folder_root_checked(source.location)
        self.globs = (source.options or {}).get("globs") or ["**/*"]
        self.complete = True
        self.cursor = ""
        self.notes: list[str] = []

    def items(self) -> Iterator[Listed]:
        count = 0
        for path in self.files():
            count += 1
            if count > MAX_FOLDER_FILES:
                self.complete = False
                self.notes.append(f"stopped after {MAX_FOLDER_FILES} files; the others were not read")
                return
            yield self._listed(path)

    def files(self) -> Iterator[Path]:
        # Symbolic links are not followed: a link could lead out of the allowed root.
        for folder, _dirs, names in os.walk(self.root, followlinks=False):
            for name in sorted(names):
                path = Path(folder) / name
                relative = path.relative_to(self.root).as_posix()
                if not path.is_symlink() and any(glob_match(relative, g) for g in self.globs):
                    yield path

    def _listed(self, path: Path) -> Listed:
        key = path.relative_to(self.root).as_posix()
        try:
            # Opened without following a link, and checked where it really is once open: a file
            # swapped for a link (or a folder for a link to elsewhere) after the walk is not read.
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            return Listed(key, error=f"the file could not be opened ({exc.strerror})")
        with os.fdopen(descriptor, "rb") as opened:
            real = Path(os.readlink(f"/proc/self/fd/{descriptor}"))
            if self.root not in real.parents:
                return Listed(key, error="the file is not inside the source's folder any more")
            stat = os.fstat(descriptor)
            stamp = f"{stat.st_mtime_ns}:{stat.st_size}"
            item = self.known.get(key)
            if item is not None and item.last_modified == stamp and not item.error:
                return Listed(key, origin_url=item.origin_url, last_modified=stamp)
            if stat.st_size > settings.KNOWLEDGE_MAX_UPLOAD_BYTES:
                limit = settings.KNOWLEDGE_MAX_UPLOAD_BYTES // (1024 * 1024)
                return Listed(key, error=f"the file is larger than {limit} MB (KNOWLEDGE_MAX_UPLOAD_MB)")
            return Listed(
                key, filename=item_filename(self.source.pk, key), data=opened.read(), last_modified=stamp
            )


def folder_root_checked(location: str) -> Path:
    """The folder, if it is under one of the roots the operator allows."""
    root = Path(location).resolve()
    allowed = settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS
    if not any(root == base or base in root.parents for base in allowed):
        raise SourceReadError(
            f"{location} is not under a folder the operator allows (KNOWLEDGE_SOURCES_FOLDER_ROOTS)"
        )
    if not root.is_dir():
        raise SourceReadError(f"{location} is not a folder")
    return root


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


def git_url_checked(url: str) -> None:
    try:
        check_git_url(url, git_policy())
    except GitRefused as exc:
        raise SourceReadError(exc.reason) from exc


# -- preview --------------------------------------------------------------------------------------

# Items a preview lists.
PREVIEW_ITEMS = 50


def preview_items(source: Source) -> tuple[list[str], str]:
    """What a first sync would read, before the source is added: up to PREVIEW_ITEMS items, and a
    note ("and more", or why nothing can be listed yet). Nothing is stored."""
    if source.kind == Source.Kind.WEB:
        return WebReader(source, {}).preview()
    if source.kind == Source.Kind.FOLDER:
        reader = FolderReader(source, {})
        found = itertools.islice(reader.files(), PREVIEW_ITEMS + 1)
        keys = [path.relative_to(reader.root).as_posix() for path in found]
        return keys[:PREVIEW_ITEMS], "and more" if len(keys) > PREVIEW_ITEMS else ""
    return [], "the repository's files that match the patterns are listed by its first sync"
