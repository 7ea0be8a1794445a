"""What a source holds now: its items, each either fetched again (changed or new) or known unchanged.

One reader per kind of source. A reader never fetches what it can tell is unchanged: a web page is
asked for with its ETag and Last-Modified (a 304 is unchanged); a Git repository's changes come from
the diff between the last synced commit and the new one; a folder's file is read again only when its
modification time or size moved. The sync (knowledge.services.sources) then compares the content's
hash, so a page served again with the same bytes is unchanged too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
import os
import re
import shutil
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

from django.conf import settings
from django.db import transaction

from config.base.errors import KnowledgeError, QuotaExceededError
from knowledge.clients.git_source import (
    GitFailed,
    GitMirror,
    GitPolicy,
    GitRefused,
    GitTooLarge,
    check_git_url,
    directory_bytes,
    file_url,
    glob_match,
)
from knowledge.clients.robots import RobotsRules
from knowledge.clients.web_fetch import (
    FetchDeadlinePassed,
    FetchFailed,
    FetchPolicy,
    FetchRefused,
    WebFetcher,
    parse_networks,
    url_checked,
)
from knowledge.models import Source, SourceItem
from knowledge.quotas import quota_source_disk
from knowledge.services.documents import document_filename_clean

# A page's links are followed to this depth from the start URL unless the source says otherwise.
DEFAULT_MAX_DEPTH = 3
# Sitemap indexes nest; a sitemap of sitemaps of sitemaps is enough.
MAX_SITEMAP_DEPTH = 3
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


class WebReader:
    """A site from its start URL (links followed within its host and path prefix, to a depth) or from
    its sitemap (the pages it lists). robots.txt is obeyed; at most KNOWLEDGE_SOURCES_MAX_PAGES."""

    def __init__(
        self, source: Source, known: dict[str, SourceItem], *, within_s: float | None = None
    ) -> None:
        """``within_s``: the seconds every request together may take (a preview's), else none."""
        self.source, self.known = source, known
        options = source.options or {}
        start = urlsplit(source.location)
        self.host = start.netloc
        self.prefix = options.get("path_prefix") or _folder_of(start.path)
        self.max_depth = int(options.get("max_depth", DEFAULT_MAX_DEPTH))
        self.max_pages = min(int(options.get("max_pages", settings.KNOWLEDGE_SOURCES_MAX_PAGES)),
                             settings.KNOWLEDGE_SOURCES_MAX_PAGES)  # fmt: skip
        self.fetcher = WebFetcher(fetch_policy(), within_s=within_s)
        self.sitemaps_left = math.inf  # child sitemaps this reader may still fetch
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
        except FetchDeadlinePassed as exc:
            raise SourceReadError(
                f"{self.source.location} answered too slowly: a preview waits at most "
                f"{self.fetcher.within_s:g} s for the site, robots.txt and sitemaps included"
            ) from exc
        urls = list(dict.fromkeys(u for u in candidates if self._inside(u) and robots.allows(u)))
        return urls[:PREVIEW_ITEMS], self._preview_note(len(urls), sitemap)

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
                self.complete = False  # the rest was not looked at: nothing may be taken for gone
                self.notes.append(
                    f"stopped after {self.max_pages} pages (KNOWLEDGE_SOURCES_MAX_PAGES or the source's "
                    "max_pages); the other pages were not read, and none was taken for removed"
                )
                return
            seen.add(url)
            listed, html = self._page(url, crawl=crawl, result=fetched.get(url))
            if listed.error and crawl:
                self.complete = False  # the pages below it were not reached: none may be taken for gone
            yield listed
            if crawl and html and depth < self.max_depth:
                queue.extend((link, depth + 1) for link in _links(html, url))

    def _page(self, url: str, *, crawl: bool, result=None) -> tuple[Listed, bytes | None]:
        """The page as listed, and its HTML for its links when crawling (the stored copy when it is
        unchanged). ``result``: the page as already fetched."""
        item = self.known.get(url)
        try:
            result = result or self.fetcher.get(
                url, etag=item.etag if item else "", last_modified=item.last_modified if item else ""
            )
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

    def _sitemap_urls(self, body: bytes, depth: int = 0) -> list[str]:
        locations = _sitemap_locations(body)
        if not _is_sitemap_index(body) or depth >= MAX_SITEMAP_DEPTH:
            return locations
        urls: list[str] = []
        for location in locations[: self.max_pages]:
            if self.sitemaps_left <= 0:
                self.complete = False  # the other sitemaps' pages are not listed
                self.sitemaps_skipped = True
                break
            self.sitemaps_left -= 1
            try:
                urls += self._sitemap_urls(self.fetcher.get(location).body, depth + 1)
            except (FetchRefused, FetchFailed):
                self.complete = False  # its pages are not listed: none may be taken for gone
        return urls


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
    The extension stays last: it chooses between the text formats. An upload's name rules apply
    (a file name in a repository or a folder is anybody's choice, like an uploader's)."""
    readable = readable or key.replace("/", "_")
    tag = hashlib.sha256(f"{source_id}:{key}".encode()).hexdigest()[:8]
    stem, dot, suffix = readable.rpartition(".")
    if not dot or not stem or len(suffix) > 10:
        stem, suffix = readable, ""
    # Shortened here, not by the upload's cut to the column's length, which would cut the tag off.
    name = f"{stem[:_MAX_STEM_CHARS]} ~{tag}" + (f".{suffix}" if suffix else "")
    return document_filename_clean(name)


# Leaves room for the tag and an extension in a document's name (MAX_FILENAME_CHARS).
_MAX_STEM_CHARS = 200


# -- git ------------------------------------------------------------------------------------------


def git_policy() -> GitPolicy:
    return GitPolicy(
        allowed_roots=tuple(settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS),
        allowed_networks=fetch_policy().allowed_networks,
    )


def mirror_folder(source_id: int) -> Path:
    """Everything a source keeps on this server's disk (a Git mirror, a clone being made)."""
    return Path(settings.KNOWLEDGE_SOURCES_DIR) / str(source_id)


def mirror_remove_on_commit(sender, instance: Source, **kwargs) -> None:
    """A deleted source's mirror goes once the deletion commits (connected to Source's post_delete:
    a source deleted with its collection or its owner goes the same way)."""
    folder = mirror_folder(instance.pk)
    transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))


class GitReader:
    """A branch's files that match the source's globs; after the first sync, only the diff's. The
    mirror takes at most what the owner's storage quota leaves (knowledge.quotas)."""

    def __init__(self, source: Source, known: dict[str, SourceItem]) -> None:
        self.source, self.known = source, known
        options = source.options or {}
        self.branch = options.get("branch") or "main"
        self.globs = options.get("globs") or ["**/*.md"]
        self.quota, self.used = quota_source_disk(source=source)
        allowance = None if self.quota is None else max(self.quota - self.used, 0)
        self.mirror = GitMirror(
            mirror_folder(source.pk) / "repo.git",
            source.location,
            self.branch,
            dataclasses.replace(git_policy(), max_disk_bytes=allowance),
        )
        self.complete = True
        self.cursor = ""
        self.notes: list[str] = []

    def items(self) -> Iterator[Listed]:
        self.cursor = self._update()
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

    def _update(self) -> str:
        """The branch's commit, fetched; what the mirror takes on disk is recorded however it went."""
        try:
            return self.mirror.update()
        except GitTooLarge as exc:
            raise QuotaExceededError(
                f"storage quota reached: {self.used} of {self.quota} bytes used; the repository's copy "
                f"on this server needs more than the {exc.limit} bytes left, and nothing was changed",
                quota="bytes",
                limit=self.quota,
                used=self.used,
            ) from None
        finally:
            size = directory_bytes(mirror_folder(self.source.pk))
            Source.objects.filter(pk=self.source.pk).update(disk_bytes=size)
            self.source.disk_bytes = size

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
        for count, path in enumerate(self._matching(), start=1):
            if count > MAX_FOLDER_FILES:
                self.complete = False
                self.notes.append(f"stopped after {MAX_FOLDER_FILES} files; the others were not read")
                return
            yield self._listed(path)

    def files(self) -> Iterator[Path]:
        """The regular files a sync reads (a named pipe, a socket or a device is not one)."""
        return (path for path in self._matching() if _is_regular(path))

    def _matching(self) -> Iterator[Path]:
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
            # Without blocking: a named pipe nobody writes to would hold open() and the worker for good.
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError as exc:
            return Listed(key, error=f"the file could not be opened ({exc.strerror})")
        with os.fdopen(descriptor, "rb") as opened:
            return self._read(key, opened)

    def _read(self, key: str, opened) -> Listed:
        """The open file's item; what it is was asked of the open descriptor, which cannot be swapped."""
        status = os.fstat(opened.fileno())
        if refusal := _not_readable(status):
            return Listed(key, error=refusal)
        real = Path(os.readlink(f"/proc/self/fd/{opened.fileno()}"))
        if self.root not in real.parents:
            return Listed(key, error="the file is not inside the source's folder any more")
        stamp = f"{status.st_mtime_ns}:{status.st_size}"
        item = self.known.get(key)
        if item is not None and item.last_modified == stamp and not item.error:
            return Listed(key, origin_url=item.origin_url, last_modified=stamp)
        limit = settings.KNOWLEDGE_MAX_UPLOAD_BYTES
        # One byte past the limit at most: the file may have grown since fstat.
        data = opened.read(limit + 1) if status.st_size <= limit else None
        if data is None or len(data) > limit:
            megabytes = limit // (1024 * 1024)
            return Listed(key, error=f"the file is larger than {megabytes} MB (KNOWLEDGE_MAX_UPLOAD_MB)")
        return Listed(key, filename=item_filename(self.source.pk, key), data=data, last_modified=stamp)


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:  # gone since the walk
        return False


_FILE_KINDS = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
}


def _not_readable(status: os.stat_result) -> str:
    """Why a folder source does not read this file, or "" when it does."""
    if not stat.S_ISREG(status.st_mode):
        kind = _FILE_KINDS.get(stat.S_IFMT(status.st_mode), "a special file")
        return f"not a regular file ({kind}); it was not read"
    # Another name of the same file may be anywhere on its file system, outside the allowed root
    # too. Comparing device and inode with the root's own files cannot tell: the link inside the
    # root is one of them. Nothing finds the other names short of walking the whole file system, so
    # only a file with a single name, the one inside the root, is read (a copy is; a link is not).
    if status.st_nlink > 1:
        return (
            f"the file has {status.st_nlink} names (hard links), which may be outside the source's "
            "folder; it was not read (copy it into the folder instead)"
        )
    return ""


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
# Sitemaps a preview of a sitemap index reads: its requests stay a handful (with robots.txt and the
# index), whatever the index lists.
PREVIEW_SITEMAPS = 3


def preview_items(source: Source) -> tuple[list[str], str]:
    """What a first sync would read, before the source is added: up to PREVIEW_ITEMS items, and a
    note ("and more", or why nothing can be listed yet). Nothing is stored."""
    if source.kind == Source.Kind.WEB:
        return WebReader(source, {}, within_s=settings.KNOWLEDGE_SOURCES_PREVIEW_SECONDS).preview()
    if source.kind == Source.Kind.FOLDER:
        reader = FolderReader(source, {})
        found = itertools.islice(reader.files(), PREVIEW_ITEMS + 1)
        keys = [path.relative_to(reader.root).as_posix() for path in found]
        return keys[:PREVIEW_ITEMS], "and more" if len(keys) > PREVIEW_ITEMS else ""
    return [], "the repository's files that match the patterns are listed by its first sync"
