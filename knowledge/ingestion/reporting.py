"""What a format's reader says while it reads: where it is ("reading page 3 of 40 (OCR)") and what it
had to leave out, with the reason ("page 7 could not be read by OCR: ...").

The extraction process listens and sends both to the pipeline as they happen (the stage is shown on
the document while it is processed; what was left out stays on the document once it is ready).
Nobody listening (a direct call, a test), a reader's report is only logged. Pure: no Django.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)

# kind ("stage" or "skipped"), text
Listener = Callable[[str, str], None]
_listener: Listener | None = None


def report_stage(text: str) -> None:
    if _listener is not None:
        _listener("stage", text)


def report_skipped(text: str) -> None:
    """A part of the document that could not be read: recorded on the document, not fatal to it."""
    logger.warning("Left out while reading: %s", text)
    if _listener is not None:
        _listener("skipped", text)


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send the reports made inside the block to ``listener`` (one document at a time per process)."""
    global _listener
    previous, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = previous


def page_stage(number: int, total: int, *, ocr: bool = False) -> str:
    return f"reading page {number} of {total}" + (" (OCR)" if ocr else "")
