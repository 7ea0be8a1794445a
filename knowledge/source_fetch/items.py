"""What every reader of a source lists, and how it names the documents it makes.

Shared by the readers of web sites (knowledge.source_fetch.web_reader) and of Git repositories and
folders (knowledge.source_fetch.readers).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from config.base.errors import KnowledgeError
from knowledge.models.documents import document_filename_clean


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
