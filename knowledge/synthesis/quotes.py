"""A quoted sentence's place in its passage, as character offsets: what a citation link carries.

The extractive answer quotes a chunk's sentence with its white space collapsed; the link to the
viewer carries where that sentence lies in the chunk (``quote=START-END``) rather than its text,
so no document text travels in addresses (server logs, browser history) and the viewer marks
exactly the cited characters.
"""

from __future__ import annotations

import re

# No quote is this long (a sentence is at most 600 characters, and the list it introduces 400 more).
MAX_QUOTE = 2000
_RANGE = re.compile(r"([0-9]{1,7})-([0-9]{1,7})")


def quote_span(quote: str, text: str) -> tuple[int, int] | None:
    """Where ``quote`` (white space collapsed or not) is in ``text``, or None."""
    words = quote.split()
    if not words or len(quote) > MAX_QUOTE:
        return None
    match = re.search(r"\s+".join(map(re.escape, words)), text)
    return match.span() if match else None


def quote_range_format(span: tuple[int, int]) -> str:
    return f"{span[0]}-{span[1]}"


def quote_range_parse(raw: str | None, text: str) -> tuple[int, int] | None:
    """``START-END`` of a link as offsets into ``text``; None when absent or not a quote of it."""
    match = _RANGE.fullmatch(raw or "")
    if not match:
        return None
    start, end = int(match.group(1)), int(match.group(2))
    if not (0 <= start < end <= len(text) and end - start <= MAX_QUOTE) or not text[start:end].strip():
        return None
    return start, end
