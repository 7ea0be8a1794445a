"""Contextual chunk headers (pure): where a chunk sits, prepended to the text that is embedded.

A chunk of a long document rarely names its subject: the settings reference
says "Default: False" under a heading that is the setting's name; a page of a
paper says "the Crawler" without the paper's name. The header is the section's
heading path ("Settings > Core Settings > CSRF_COOKIE_SECURE"), or the
document's title when the section has none (PDF pages, text sections). It is
embedded with the chunk, never shown as part of the chunk's text, and the
chunk's own token budget shrinks by its size so nothing is truncated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePath

from knowledge.ingestion.types import Section

# A header longer than this many model tokens keeps only the innermost headings.
MAX_HEADER_TOKENS = 40
# A single heading longer than this many characters is cut (a heading that is really a paragraph).
MAX_HEADING_CHARS = 150
_SEPARATOR = " > "
_FILENAME_NOISE = re.compile(r"[_\-.]+")


def title_from_filename(filename: str) -> str:
    """'GeoBase_NHNC1_Data_Model.pdf' -> 'GeoBase NHNC1 Data Model'."""
    return _FILENAME_NOISE.sub(" ", PurePath(filename).stem).strip()


def section_header(section: Section, *, title: str, count_tokens: Callable[[str], int]) -> str:
    """The section's heading path, or the document title when it has none; at most MAX_HEADER_TOKENS."""
    path = [
        " ".join(part.split())[:MAX_HEADING_CHARS] for part in section.heading_path if part and part.strip()
    ]
    if not path:
        return " ".join(title.split())[:MAX_HEADING_CHARS]
    while len(path) > 1 and count_tokens(_SEPARATOR.join(path)) > MAX_HEADER_TOKENS:
        path = path[1:]
    return _SEPARATOR.join(path)


def embedding_text(header: str, content: str) -> str:
    """What the model reads for a chunk: its header on the first line, then its text."""
    return f"{header}\n{content}" if header else content
