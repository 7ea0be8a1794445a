"""Snippets of a passage for search results: a window around the searched words, those words marked.

Pure functions: text in, (piece, marked) pairs out, which a template renders as text and <mark>.
"""

from __future__ import annotations

import re

SNIPPET_CHARS = 260
# Words shorter than this ("a", "of", "is") are not looked for or marked.
MIN_WORD = 3


def query_words(query: str) -> list[str]:
    """The searched words worth marking, lower-cased, longest first (so "pets" wins over "pet")."""
    words = {w.lower() for w in re.findall(r"\w+", query) if len(w) >= MIN_WORD}
    return sorted(words, key=lambda w: (-len(w), w))


def _word_pattern(words: list[str]) -> re.Pattern | None:
    if not words:
        return None
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)


def snippet(text: str, query: str, *, chars: int = SNIPPET_CHARS) -> list[tuple[str, bool]]:
    """A window of ``text`` around the first searched word (its start when none occurs), with every
    occurrence marked; "…" where the window cuts the text."""
    text = " ".join(text.split())
    pattern = _word_pattern(query_words(query))
    first = pattern.search(text) if pattern else None
    start = 0 if first is None else max(0, first.start() - chars // 3)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < first.start() else start
    end = min(len(text), start + chars)
    window = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    return marked(window, pattern)


def marked(text: str, pattern: re.Pattern | None) -> list[tuple[str, bool]]:
    """``text`` split into pieces, the ones matching ``pattern`` flagged True."""
    if pattern is None:
        return [(text, False)] if text else []
    pieces, last = [], 0
    for match in pattern.finditer(text):
        if match.start() > last:
            pieces.append((text[last : match.start()], False))
        pieces.append((match.group(0), True))
        last = match.end()
    if last < len(text):
        pieces.append((text[last:], False))
    return pieces


def mark_words(text: str, query: str) -> list[tuple[str, bool]]:
    """All of ``text`` with the searched words marked (the document reader's search)."""
    return marked(text, _word_pattern(query_words(query)))
