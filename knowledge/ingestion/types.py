"""Value types passed between the pure ingestion steps.

extract (bytes -> sections) -> chunking (sections -> chunk drafts) -> pipeline.
Nothing here touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class ExtractionError(Exception):
    """A document cannot be ingested; the message is shown to the user as-is."""


class UnsupportedFormat(ExtractionError):
    """Not a format we read (a legacy Office file, a zip of something else, a binary file...)."""


class UnreadableDocument(ExtractionError):
    """A supported format, but this file cannot be read: empty, encrypted, damaged, malformed."""


@dataclass(frozen=True)
class Section:
    """A run of text that shares one strict source reference.

    ``source_ref`` follows the strict formats (``page=3``, ``heading=Intro``,
    ``operation=POST /users`` ...). Chunks never span two sections.
    """

    source_ref: str
    text: str
    heading_path: tuple[str, ...] = ()
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    # Linked content (OpenAPI): this section's own id, e.g.
    # "api.json:components/schemas/User", the ids it references through $ref,
    # and the ids of the sections that reference it.
    element_id: str = ""
    ref_ids: tuple[str, ...] = ()
    referenced_by: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    # A table's rows (sheets): (where the row's line starts in ``text``, its row number on the sheet,
    # its cells as text). Not stored: each chunk keeps the rows it holds (ChunkDraft.metadata).
    rows: tuple[tuple[int, int, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk ready to be embedded: its text and the section it came from."""

    section: Section
    content: str
    token_count: int
    # Where the chunk sits (heading path or document title), embedded with it; see headers.py.
    header: str = ""
    # What the chunk adds to its section's metadata: a table chunk's rows and cells ("cells": [[row
    # number, [cell, ...], where the row's line starts in the chunk's content], ...]).
    metadata: dict = field(default_factory=dict)
