"""Bytes in, sections out: turn an uploaded file into citable text sections.

The format is detected from the content (``formats.detect``) and the file is
read by that format's module in ``knowledge.ingestion.formats`` (pypdf,
python-docx, python-pptx, openpyxl, csv, BeautifulSoup, PyYAML), cut into
:class:`~knowledge.ingestion.types.Section` objects that each carry one strict
``source_ref`` (``page=3``, ``slide=2``, ``sheet=Sales``, ``heading=Intro``,
``section=TITLE``, ``operation=GET /users``, ``component=schemas/User``).

Everything here is pure (no Django, no database). Any problem a user can fix
raises :class:`ExtractionError`: ``UnsupportedFormat`` for a file type we do not
read, ``UnreadableDocument`` for an empty, encrypted or corrupt file, and
``LimitExceeded`` for one that breaks the ingestion limits; the message is
shown to the user as-is.
"""

from __future__ import annotations

from collections.abc import Iterator

from knowledge.ingestion.formats import EXTRACTORS
from knowledge.ingestion.formats.detect import detect_format
from knowledge.ingestion.limits import DEFAULT_LIMITS, IngestLimits, TextBudget
from knowledge.ingestion.types import Section, UnreadableDocument


def extract_sections(filename: str, data: bytes, *, limits: IngestLimits = DEFAULT_LIMITS) -> list[Section]:
    """Extract the non-empty sections of a document, in document order.

    Raises :class:`ExtractionError` for unsupported, empty, encrypted or
    corrupt files, and when the file holds no text at all (a scanned PDF
    without a text layer, a deck of pictures...), because indexing it would
    silently produce nothing to cite. Raises its subclass ``LimitExceeded`` as
    soon as the document breaks one of ``limits`` (text, sections, pages...).
    """
    return list(iter_sections(filename, data, limits=limits))


def iter_sections(filename: str, data: bytes, *, limits: IngestLimits = DEFAULT_LIMITS) -> Iterator[Section]:
    """``extract_sections`` one section at a time, each as soon as it is read (a PDF page by page).

    The pipeline chunks and embeds the first pages while pypdf reads the next
    ones. The errors are those of ``extract_sections``, raised when reached:
    "no text" only after the last section.
    """
    fmt = detect_format(filename, data, limits=limits)
    budget = TextBudget(limits)
    found = False
    try:
        for section in EXTRACTORS[fmt](filename, data, budget):
            if section.text.strip():
                found = True
                yield section
    except RecursionError:
        # Markup nested thousands of levels deep (HTML, XML parts) outruns the recursive walkers.
        raise UnreadableDocument(f"{filename} is nested too deeply to be read") from None
    if not found:
        hint = " (it may be a scanned PDF without a text layer)" if fmt == "pdf" else ""
        raise UnreadableDocument(f"no text could be extracted from {filename}{hint}")
