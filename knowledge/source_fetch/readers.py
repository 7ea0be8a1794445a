"""What a source holds now: its items, each either fetched again (changed or new) or known unchanged.

One reader per kind of source. A reader never fetches what it can tell is unchanged: a web page is
asked for with its ETag and Last-Modified (a 304 is unchanged); a Git repository's changes come from
the diff between the last synced commit and the new one; a folder's file is read again only when its
modification time or size moved. The sync (knowledge.services.sources) then compares the content's
hash, so a page served again with the same bytes is unchanged too.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import transaction

from config.base.errors import QuotaExceededError
from knowledge.models import Source, SourceItem
from knowledge.quotas import quota_source_disk
from knowledge.source_fetch.git import (
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
from knowledge.source_fetch.items import Listed, SourceReadError, item_filename
from knowledge.source_fetch.web_reader import PREVIEW_ITEMS, WebReader, fetch_policy, preview_budget


def reader_for(source: Source, known: dict[str, SourceItem]):
    return {Source.Kind.WEB: WebReader, Source.Kind.GIT: GitReader, Source.Kind.FOLDER: FolderReader}[
        source.kind
    ](source, known)


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


def git_url_checked(url: str) -> None:
    try:
        check_git_url(url, git_policy())
    except GitRefused as exc:
        raise SourceReadError(exc.reason) from exc


# -- preview --------------------------------------------------------------------------------------


def preview_items(source: Source) -> tuple[list[str], str]:
    """What a first sync would read, before the source is added: up to PREVIEW_ITEMS items, and a
    note ("and more", or why nothing can be listed yet). Nothing is stored."""
    if source.kind == Source.Kind.WEB:
        return WebReader(source, {}, budget=preview_budget()).preview()
    if source.kind == Source.Kind.FOLDER:
        reader = FolderReader(source, {})
        found = itertools.islice(reader.files(), PREVIEW_ITEMS + 1)
        keys = [path.relative_to(reader.root).as_posix() for path in found]
        return keys[:PREVIEW_ITEMS], "and more" if len(keys) > PREVIEW_ITEMS else ""
    return [], "the repository's files that match the patterns are listed by its first sync"
