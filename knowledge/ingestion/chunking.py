r"""Sections -> chunk drafts (pure: no Django, no database).

Every strategy works on one ``Section`` at a time, so a chunk never spans two
sections. ``chunk_size`` / ``chunk_overlap`` are characters for the first
three strategies and model tokens for ``semantic``:

* ``paragraph`` (default, seed 000): split on blank lines and combine
  paragraphs up to ``chunk_size`` characters; a paragraph longer than
  ``1.5 * chunk_size`` is split at sentence boundaries; a section longer than
  ``3 * chunk_size`` with fewer than 3 paragraphs is chunked as ``fixed``.
  The last ``chunk_overlap`` characters of the previous chunk (from a word
  start) are prepended to the next chunk; ``chunk_size`` bounds the new text.
* ``sentence``: sentences (``(?<=[.!?])\s+``, blank lines, and CJK 。！？) are
  packed up to ``chunk_size`` characters including the overlap, which is the
  whole trailing sentences of the previous chunk that fit in ``chunk_overlap``.
* ``fixed``: windows of ``chunk_size`` characters stepping by
  ``chunk_size - chunk_overlap``; a window end moves back to whitespace found
  in its last 20 %, an overlap start moves forward to a word start.
* ``semantic`` (seed 003): the section is one heading's text (stage 1); it is
  split recursively on ``["\n\n", "\n", ". ", " ", ""]`` (". " meaning any
  sentence end), each piece measured with ``count_tokens``, and packed to
  ``chunk_size`` tokens with ``chunk_overlap`` tokens of overlap (whole
  trailing pieces, or else the tail of the last piece from a sentence or word
  start). Each chunk starts with the heading path ("A > B") on its own line,
  counted in the token budget. A chunk is also kept under 10 characters per
  token of budget, so a long run that the tokenizer reads as one [UNK] is
  still split.

Hard rule for every strategy: ``count_tokens(chunk.content) <= max_tokens``
(all-MiniLM-L6-v2 reads 256 word pieces including [CLS] and [SEP], so 254 by
default). A piece over the limit is split further (paragraphs, lines,
sentences, words, then characters) and never truncated or dropped. Overlap is
left out, or shortened, where it would break the rule. Every chunk body is a
verbatim slice of the section text, so a section's chunks, ignoring overlap,
contain all of its text.

Token counting is linear in the text: pieces are counted once each, and where
pieces are small (words, short lines) token counts are estimated from a
measured tokens-per-character ratio and only the packed chunk is counted.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence

from knowledge.ingestion.limits import LimitExceeded
from knowledge.ingestion.types import ChunkDraft, Section

__all__ = ["STRATEGIES", "DEFAULT_MAX_TOKENS", "chunk_sections"]

STRATEGIES = ("paragraph", "sentence", "fixed", "semantic")
DEFAULT_MAX_TOKENS = 254

# Gaps between pieces at each level (the pieces are what lies between matches).
_PARAGRAPH_GAP = re.compile(r"\n[^\S\n]*\n\s*")
_LINE_GAP = re.compile(r"\n\s*")
_SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
_SENTENCE_UNIT_GAP = re.compile(r"(?<=[.!?])\s+|\n[^\S\n]*\n\s*|(?<=[。！？])\s*")
_WORD_GAP = re.compile(r"\s+")
_WHITESPACE = re.compile(r"\s")

# Recursive levels for token fitting and for the semantic strategy:
# "\n\n", "\n", ". " (any sentence end), " ", and characters as the last resort.
_TOKEN_LEVELS = (_PARAGRAPH_GAP, _LINE_GAP, _SENTENCE_GAP, _WORD_GAP)
# Levels for cutting an oversize sentence to a character budget.
_CHAR_LEVELS = (_LINE_GAP, _WORD_GAP)

# Below this average piece length (characters) pieces are not counted one by
# one: their token counts are estimated and the packed chunk is verified.
_ESTIMATE_BELOW_CHARS = 120
# Token-measured chunks are also kept under (token budget * this) characters: a
# long run without spaces can be a single [UNK] token and would otherwise stay
# whole (semantic strategy); longer pieces are split without being counted.
_MAX_CHARS_PER_TOKEN = 10
# Characters counted to estimate tokens per character of a long slice.
_SAMPLE_CHARS = 4000
# In the fixed strategy a window end moves back to whitespace found in its last 20 %.
_FIXED_BACKTRACK = 0.2

# (start, end, size, verified): a slice of the section text; ``size`` is its
# measure (tokens or characters), exact when ``verified`` else an estimate.
_Span = tuple[int, int, float, bool]


def chunk_sections(
    sections: Sequence[Section],
    *,
    strategy: str,
    chunk_size: int,
    chunk_overlap: int,
    count_tokens: Callable[[str], int],
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_chunks: int | None = None,
) -> list[ChunkDraft]:
    """Chunk each section on its own; output in section order, then position.

    ``chunk_size`` / ``chunk_overlap`` are characters for ``paragraph``,
    ``sentence`` and ``fixed`` and model tokens for ``semantic``.
    ``count_tokens`` returns the embedding tokenizer's piece count without
    special tokens; every chunk satisfies ``count_tokens(content) <= max_tokens``
    and ``token_count == count_tokens(content)``. With ``max_chunks``,
    ``LimitExceeded`` is raised as soon as a section takes the count past it,
    before the rest of the document is chunked.
    """
    _validate(strategy, chunk_size, chunk_overlap, count_tokens, max_tokens)
    drafts: list[ChunkDraft] = []
    for section in sections:
        drafts.extend(_chunk_section(section, strategy, chunk_size, chunk_overlap, count_tokens, max_tokens))
        if max_chunks is not None and len(drafts) > max_chunks:
            raise LimitExceeded(
                f"it would make {len(drafts):,} chunks or more", max_chunks, "max_chunks", "chunks"
            )
    return drafts


def _validate(strategy, chunk_size, chunk_overlap, count_tokens, max_tokens) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown chunking strategy {strategy!r}; expected one of {STRATEGIES}")
    for name, value in (
        ("chunk_size", chunk_size),
        ("chunk_overlap", chunk_overlap),
        ("max_tokens", max_tokens),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    if chunk_overlap < 0:
        raise ValueError(f"chunk_overlap must be >= 0, got {chunk_overlap}")
    if chunk_overlap >= chunk_size:
        raise ValueError(f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})")
    if max_tokens <= 0:
        raise ValueError(f"max_tokens must be > 0, got {max_tokens}")
    if not callable(count_tokens):
        raise ValueError("count_tokens must be callable")


# --------------------------------------------------------------------------- measures


class _Tokens:
    """Size of a slice in model tokens; whitespace between pieces costs nothing.

    With a ``prefix`` (semantic heading line) a slice is measured as it will be
    emitted, ``count(prefix + slice) - prefix_tokens``, so a verified size plus
    ``prefix_tokens`` is exactly the chunk's token count.
    """

    merged_exact = False

    def __init__(self, text: str, count: Callable[[str], int], prefix: str = "", prefix_tokens: int = 0):
        self.text = text
        self.count = count
        self.prefix = prefix
        self.prefix_tokens = prefix_tokens

    def piece(self, start: int, end: int) -> int:
        if self.prefix:
            return self.count(self.prefix + self.text[start:end]) - self.prefix_tokens
        return self.count(self.text[start:end])

    @staticmethod
    def gap(prev_end: int, next_start: int) -> int:
        return 0


class _Chars:
    """Size of a slice in characters, whitespace between pieces included."""

    merged_exact = True

    @staticmethod
    def piece(start: int, end: int) -> int:
        return end - start

    @staticmethod
    def gap(prev_end: int, next_start: int) -> int:
        return next_start - prev_end


_CHARS = _Chars()


# --------------------------------------------------------------------------- slicing helpers


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _skip_ws(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _pieces(text: str, start: int, end: int, gap: re.Pattern) -> list[tuple[int, int]]:
    """Non-empty, trimmed slices of text[start:end] between matches of ``gap``."""
    out = []
    pos = start
    for match in gap.finditer(text, start, end):
        a, b = _trim(text, pos, match.start())
        if a < b:
            out.append((a, b))
        pos = max(pos, match.end())
    a, b = _trim(text, pos, end)
    if a < b:
        out.append((a, b))
    return out


# --------------------------------------------------------------------------- recursive engine


def _merge(text: str, items: list[_Span], size: float, overlap: float, m) -> list[_Span]:
    """Greedy packing of consecutive items (LangChain's merge) into spans.

    After a span is emitted, trailing items worth <= ``overlap`` start the next
    one. With tokens, when no whole item is that small, the next span starts
    with a tail of the last item instead (<= ``overlap`` tokens, from a
    sentence or word start), so consecutive chunks still share text.
    """
    out: list[_Span] = []
    window: deque[_Span] = deque()
    total = 0.0

    def emit() -> None:
        only = window[0] if len(window) == 1 else None
        verified = m.merged_exact or (only is not None and only[3])
        out.append((window[0][0], window[-1][1], total, verified))

    for item in items:
        start, _end, n, _v = item
        if window and total + m.gap(window[-1][1], start) + n > size:
            last = window[-1]
            emit()
            while window and (total > overlap or total + m.gap(window[-1][1], start) + n > size):
                first = window.popleft()
                total = total - first[2] - m.gap(first[1], window[0][0]) if window else 0.0
            if not window and overlap and isinstance(m, _Tokens):
                tail = _token_tail(text, last, min(overlap, size - n), m)
                if tail is not None:
                    window.append(tail)
                    total = tail[2]
        total += n + (m.gap(window[-1][1], start) if window else 0)
        window.append(item)
    if window:
        emit()
    return out


def _token_tail(text: str, item: _Span, budget: float, m) -> _Span | None:
    """The end of ``item`` worth <= budget tokens, from a sentence or word start."""
    start, end, n, _v = item
    if budget < 1 or n <= 0:
        return None
    length = int((end - start) * budget / n * 0.9)
    for _ in range(3):
        t = _tail_start(text, start, end, length)
        if t is None:
            return None
        sentence = _SENTENCE_GAP.search(text, t, end)
        if sentence is not None and end - sentence.end() >= (end - t) // 2:
            t = sentence.end()
        if t >= end:
            return None
        tail_tokens = m.piece(t, end)
        if tail_tokens <= budget:
            return (t, end, tail_tokens, False)
        length = int((end - t) * budget / tail_tokens * 0.9)
    return None


def _split(
    text: str,
    start: int,
    end: int,
    levels: Sequence[re.Pattern],
    size: float,
    overlap: float,
    m,
    known: int | None = None,
    ratio_hint: float | None = None,
) -> list[_Span]:
    """Split the trimmed slice text[start:end] into spans whose measure is <= size.

    The first level whose gap occurs splits the slice; fitting pieces are packed
    with ``overlap``; oversize pieces recurse with the remaining levels, and
    characters are the last resort. With the token measure, packed spans of more
    than one piece are estimates (sums) unless the pieces were tiny, in which
    case the packed span was counted.
    """
    if known is not None and known <= size:
        return [(start, end, known, True)]
    pieces: list[tuple[int, int]] = []
    rest: Sequence[re.Pattern] = ()
    for i, gap in enumerate(levels):
        pieces = _pieces(text, start, end, gap)
        if len(pieces) != 1:
            rest = levels[i + 1 :]
            break
    else:
        return _cut_chars(text, start, end, size, m, known)
    if not pieces:
        return []
    if isinstance(m, _Tokens) and (end - start) / len(pieces) < _ESTIMATE_BELOW_CHARS:
        if known is None and ratio_hint is not None:
            return _split_estimated(text, pieces, rest, size, overlap, m, ratio_hint)
        if known is None and end - start <= _SAMPLE_CHARS:
            known = m.piece(start, end)
            if known <= size:
                return [(start, end, known, True)]
        if known is not None:
            ratio = known / (sum(b - a for a, b in pieces) or 1)
        else:
            # Long slice: estimate tokens per character from its beginning.
            k = 0
            while k < len(pieces) - 1 and pieces[k][1] - start < _SAMPLE_CHARS:
                k += 1
            sample = pieces[: k + 1]
            ratio = m.piece(start, sample[-1][1]) / (sum(b - a for a, b in sample) or 1)
        return _split_estimated(text, pieces, rest, size, overlap, m, ratio)

    out: list[_Span] = []
    good: list[_Span] = []

    def flush() -> None:
        out.extend(_merge(text, good, size, overlap, m))
        good.clear()

    # A token-measured piece this long is split without being counted first: it
    # almost surely exceeds ``size``, and the semantic character cap would split it.
    too_long = size * _MAX_CHARS_PER_TOKEN if isinstance(m, _Tokens) else None
    for a, b in pieces:
        if too_long is not None and b - a > too_long:
            flush()
            out.extend(_split(text, a, b, rest, size, overlap, m))
            continue
        n = m.piece(a, b)
        if n <= size:
            good.append((a, b, n, True))
        else:
            flush()
            out.extend(_split(text, a, b, rest, size, overlap, m, known=n))
    flush()
    return out


def _split_estimated(text, pieces, rest, size, overlap, m, ratio) -> list[_Span]:
    """Pack tiny pieces by estimated token counts, counting each packed span."""
    out: list[_Span] = []
    run: list[_Span] = []
    for a, b in pieces:
        estimate = (b - a) * ratio
        if estimate > size / 2:
            n = m.piece(a, b)
            if n > size:
                out.extend(_pack_counted(text, run, rest, size, overlap, m))
                run = []
                out.extend(_split(text, a, b, rest, size, overlap, m, known=n))
                continue
            run.append((a, b, n, True))
        else:
            run.append((a, b, estimate, False))
    out.extend(_pack_counted(text, run, rest, size, overlap, m))
    return out


def _pack_counted(text, items, rest, size, overlap, m) -> list[_Span]:
    """Greedy packing of items by estimated size; every packed span is counted.

    When a count shows the estimate was low, the span loses items from its end
    (they go to the next span); estimates are rescaled by the last count. The
    next span repeats trailing items of the previous one worth <= ``overlap``.
    """
    out: list[_Span] = []
    prefix = [0.0]
    for item in items:
        prefix.append(prefix[-1] + item[2])

    def est(first: int, stop: int) -> float:
        return (prefix[stop] - prefix[first]) * scale

    scale = 1.0
    prev: tuple[int, int] | None = None
    i = 0
    while i < len(items):
        k = i
        tail: _Span | None = None  # part of the previous span's last item
        if prev is not None and overlap:
            for k0 in range(prev[0] + 1, prev[1]):
                if est(k0, prev[1]) <= overlap:
                    k = k0
                    break
            else:
                last = items[i - 1]
                tail = _token_tail(text, (last[0], last[1], last[2] * scale, False), overlap, m)
        j_cap = len(items)
        while True:
            while k < i and est(k, i + 1) > size:
                k += 1
            head = tail[2] if tail is not None else 0.0
            j = i + 1
            while j < j_cap and head + est(k, j + 1) <= size:
                j += 1
            first = tail[0] if tail is not None else items[k][0]
            if tail is None and j - k == 1 and items[k][3]:
                n = items[k][2]
            else:
                n = m.piece(first, items[j - 1][1])
                raw = prefix[j] - prefix[k]
                if raw > 0 and tail is None:
                    scale = n / raw
            if n <= size:
                break
            if j > i + 1:
                j_cap = j - 1
            elif k < i:
                k += 1
            elif tail is not None:
                tail = None
            else:
                break  # one item, estimated to fit, is over: split it further
        if n <= size:
            out.append((first, items[j - 1][1], n, True))
            prev = (k, j)
        else:
            out.extend(_split(text, items[i][0], items[i][1], rest, size, overlap, m, known=n))
            prev = None
        i = j
    return out


def _cut_chars(text, start, end, size, m, known) -> list[_Span]:
    """Last resort for a slice without whitespace (a URL, base64, CJK run)."""
    if not isinstance(m, _Tokens):
        step = max(1, int(size))
        return [(a, min(a + step, end), min(a + step, end) - a, True) for a in range(start, end, step)]
    total = known if known is not None else m.piece(start, end)
    if total <= size:
        return [(start, end, total, True)]
    step = max(1, int((end - start) * size / total * 0.9))
    out: list[_Span] = []
    pos = start
    while pos < end:
        cut = min(end, pos + step)
        n = m.piece(pos, cut)
        while n > size and cut - pos > 1:
            cut = pos + max(1, min(cut - pos - 1, int((cut - pos) * size / n * 0.9)))
            n = m.piece(pos, cut)
        out.append((pos, cut, n, True))
        pos = cut
    return out


def _fit_tokens(text, start, end, limit, tokens, known=None, ratio_hint=None) -> list[_Span]:
    """Split a slice into spans of at most ``limit`` tokens, no overlap."""
    return _split(text, start, end, _TOKEN_LEVELS, limit, 0, tokens, known=known, ratio_hint=ratio_hint)


def _force_fit(text, start, end, limit, tokens, known=None, ratio_hint=None) -> list[_Span]:
    """Like ``_fit_tokens`` but always makes progress on a slice over ``limit``.

    If the token split returns the slice unchanged (a tokenizer whose counts do
    not add up over whitespace), the slice is halved instead.
    """
    pieces = _fit_tokens(text, start, end, limit, tokens, known=known, ratio_hint=ratio_hint)
    if len(pieces) == 1 and pieces[0][:2] == (start, end) and not (pieces[0][3] and pieces[0][2] <= limit):
        return _halves(text, start, end, limit)
    return pieces


def _halves(text, start, end, limit) -> list[_Span]:
    """Two halves of a slice, cut at a space near the middle if there is one."""
    if end - start <= 1:
        raise ValueError(f"a single character exceeds the token limit ({limit})")
    mid = (start + end) // 2
    space = text.rfind(" ", start + 1, mid + 1)
    mid = space if space > start + (end - start) // 4 else mid
    pieces = []
    for a, b in ((start, mid), (mid, end)):
        a, b = _trim(text, a, b)
        if a < b:
            pieces.append((a, b, 0, False))
    return pieces


# --------------------------------------------------------------------------- strategies


def _chunk_section(section, strategy, chunk_size, chunk_overlap, count, max_tokens):
    text = section.text or ""
    if not text.strip():
        return []
    prefix, prefix_tokens = "", 0
    if strategy == "semantic":
        prefix, prefix_tokens = _heading_prefix(section.heading_path, count, max_tokens)
    tokens = _Tokens(text, count, prefix, prefix_tokens)
    if strategy == "paragraph":
        spans = _paragraph(text, chunk_size, chunk_overlap, tokens, max_tokens)
    elif strategy == "sentence":
        spans = _sentence(text, chunk_size, chunk_overlap, tokens, max_tokens)
    elif strategy == "fixed":
        spans = _fixed(text, chunk_size, chunk_overlap, tokens, max_tokens)
    else:
        spans = _semantic(text, chunk_size, chunk_overlap, tokens, max_tokens, prefix_tokens)
    return _finalize(section, text, spans, tokens, max_tokens)


def _char_units(text, start, end, size) -> list[tuple[int, int]]:
    """Split an oversize sentence into pieces of at most ``size`` characters."""
    return [(a, b) for a, b, _n, _v in _split(text, start, end, _CHAR_LEVELS, size, 0, _CHARS)]


def _paragraph(text, size, overlap, tokens, max_tokens) -> list[tuple[int, int, int | None]]:
    paragraphs = _pieces(text, 0, len(text), _PARAGRAPH_GAP)
    if len(text) > 3 * size and len(paragraphs) < 3:
        return _fixed(text, size, overlap, tokens, max_tokens)
    units: list[tuple[int, int]] = []
    for a, b in paragraphs:
        if b - a <= size * 1.5:
            units.append((a, b))
            continue
        for s, e in _pieces(text, a, b, _SENTENCE_GAP):
            units.extend([(s, e)] if e - s <= size else _char_units(text, s, e, size))
    return _pack_units(text, units, size, overlap, tokens, max_tokens, tail_overlap=True)


def _sentence(text, size, overlap, tokens, max_tokens) -> list[tuple[int, int, int | None]]:
    units: list[tuple[int, int]] = []
    for a, b in _pieces(text, 0, len(text), _SENTENCE_UNIT_GAP):
        units.extend([(a, b)] if b - a <= size else _char_units(text, a, b, size))
    return _pack_units(text, units, size, overlap, tokens, max_tokens, tail_overlap=False)


def _pack_units(text, units, size, overlap, tokens, max_tokens, *, tail_overlap):
    """Pack consecutive units into chunks of <= size characters and <= max_tokens.

    ``tail_overlap`` (paragraph): the last ``overlap`` characters of the previous
    chunk, from a word start, are prepended and ``size`` bounds the new units
    only. Otherwise (sentence): whole trailing units of the previous chunk
    spanning <= ``overlap`` characters are repeated and ``size`` bounds the
    whole chunk. Token sizes are estimated from the last counted chunk's tokens
    per character and each chunk is counted once (again only when the estimate
    was too low); a single unit over ``max_tokens`` is split by tokens.
    """
    work: list[tuple[int, int, int | None]] = [(a, b, None) for a, b in units]
    out: list[tuple[int, int, int | None]] = []
    ratio: float | None = None  # tokens per character of the last counted chunk
    prev: tuple[int, int, int, int] | None = None  # start, end, first unit, stop unit
    i = 0
    while i < len(work):
        ov_pos: int | None = None  # tail overlap start
        ov_unit: int | None = None  # first repeated unit
        if prev is not None and overlap:
            if tail_overlap:
                ov_pos = _tail_start(text, prev[0], prev[1], overlap)
            else:
                last_end = work[prev[3] - 1][1]
                for k in range(prev[2], prev[3]):
                    if last_end - work[k][0] <= overlap:
                        ov_unit = k
                        break
                while ov_unit is not None and work[i][1] - work[ov_unit][0] > size:
                    ov_unit = ov_unit + 1 if ov_unit + 1 < i else None
        if ratio is not None and (ov_pos is not None or ov_unit is not None):
            # Leave the overlap out, or shorten it, when it would not fit the tokens.
            s0, e0, known0 = work[i]
            room = max_tokens - (known0 if known0 is not None else (e0 - s0) * ratio)
            if ov_pos is not None and (prev[1] - ov_pos) * ratio > room:
                ov_pos = _tail_start(text, ov_pos, prev[1], int(room / ratio * 0.95))
            while ov_unit is not None and (s0 - work[ov_unit][0]) * ratio > room:
                ov_unit = ov_unit + 1 if ov_unit + 1 < i else None
        j_cap = len(work)
        while True:
            if ov_unit is not None:
                start = work[ov_unit][0]
            elif ov_pos is not None:
                start = ov_pos
            else:
                start = work[i][0]
            base = work[i][0] if tail_overlap else start
            j = i + 1
            while (
                j < j_cap
                and work[j][1] - base <= size
                and (ratio is None or (work[j][1] - start) * ratio <= max_tokens)
            ):
                j += 1
            end = work[j - 1][1]
            alone = start == work[i][0] and j == i + 1
            if alone and work[i][2] is not None:
                n = work[i][2]
            elif alone and ratio is not None and (end - start) * ratio > 1.5 * max_tokens:
                n = None  # surely over the limit: split it without counting it first
            else:
                n = tokens.piece(start, end)
                ratio = n / max(1, end - start)
            if n is not None and n <= max_tokens:
                break
            if j > i + 1:
                j_cap = j - 1  # fewer units (the new ratio usually drops several)
            elif ov_unit is not None:
                ov_unit = ov_unit + 1 if ov_unit + 1 < i else None
            elif ov_pos is not None:
                keep = int((prev[1] - ov_pos) - (n - max_tokens) / ratio * 1.2) - 1
                ov_pos = _tail_start(text, ov_pos, prev[1], keep)
            else:
                # One unit alone is over the limit: split it by tokens, keeping
                # room for the overlap that the next pieces will carry.
                reserve = min(max_tokens // 2, int(overlap * ratio)) if overlap else 0
                s0, e0, _known = work[i]
                known = n if reserve == 0 else None
                pieces = _force_fit(text, s0, e0, max_tokens - reserve, tokens, known=known, ratio_hint=ratio)
                work[i : i + 1] = [(a, b, int(m) if v else None) for a, b, m, v in pieces]
                j_cap = len(work)
        out.append((start, end, n))
        prev = (start, end, i if ov_unit is None else ov_unit, j)
        i = j
    return out


def _tail_start(text: str, start: int, end: int, length: int) -> int | None:
    """Start of the last ``length`` characters of text[start:end], at a word start."""
    if length <= 0:
        return None
    t = max(start, end - length)
    if t > start and not text[t - 1].isspace() and not text[t].isspace():
        match = _WHITESPACE.search(text, t, end)
        if match is None:
            return None
        t = match.start()
    t = _skip_ws(text, t, end)
    return t if t < end else None


def _window_end(text: str, pos: int, window: int) -> int:
    end = pos + window
    if end >= len(text):
        return len(text)
    if text[end].isspace() or text[end - 1].isspace():
        return end
    low = max(pos + 1, end - max(1, int(window * _FIXED_BACKTRACK)))
    best = max(text.rfind(c, low, end) for c in " \n\t\r\f\v\xa0\u3000")
    return best if best > pos else end


def _fixed(text, size, overlap, tokens, max_tokens) -> list[tuple[int, int, int | None]]:
    length = len(text)
    out = []
    pos = _skip_ws(text, 0, length)
    ratio: float | None = None  # tokens per character of the last counted window
    while pos < length:
        window = size
        if ratio is not None and ratio * size > max_tokens:
            window = max(1, int(max_tokens / ratio * 0.97))
        while True:
            end = _window_end(text, pos, window)
            a, b = _trim(text, pos, end)
            n = tokens.piece(a, b)
            ratio = n / max(1, b - a)
            if n <= max_tokens or b - a <= 1:
                break
            window = max(1, min(window - 1, int((b - a) * max_tokens / n * 0.9)))
        out.append((a, b, n))
        if _skip_ws(text, end, length) >= length:
            break
        step_overlap = overlap if window == size else overlap * window // size
        nxt = max(end - step_overlap, pos + 1)
        if nxt < end and not text[nxt - 1].isspace() and not text[nxt].isspace():
            match = _WHITESPACE.search(text, nxt, end)
            nxt = match.start() if match else end
        pos = _skip_ws(text, nxt, length)
    return out


def _heading_prefix(heading_path, count, max_tokens) -> tuple[str, int]:
    """'A > B' plus a newline, kept to at most half of ``max_tokens``."""
    parts = [" ".join(h.split()) for h in heading_path if h and h.strip()]
    if not parts:
        return "", 0
    budget = max_tokens // 2
    if budget < 1:
        return "", 0
    line = " > ".join(parts)
    while True:
        n = count(line + "\n")
        if n <= budget:
            return line + "\n", n
        if len(parts) > 1:
            parts = parts[1:]  # keep the most specific headings
            line = " > ".join(parts)
        else:
            line = line[: max(0, min(len(line) - 1, int(len(line) * budget / n * 0.9)))].rstrip()
            if not line:
                return "", 0


def _semantic(text, size, overlap, tokens, max_tokens, prefix_tokens):
    body = min(size, max_tokens) - prefix_tokens
    if body < 1:
        body = max(1, min(size, max_tokens - prefix_tokens))
    spans = _split(text, 0, len(text), _TOKEN_LEVELS, body, overlap, tokens)
    char_cap = body * _MAX_CHARS_PER_TOKEN
    out = []
    for a, b, n, verified in spans:
        if b - a > char_cap:
            out.extend(
                (x, y, None) for x, y, _n, _v in _split(text, a, b, _TOKEN_LEVELS, char_cap, 0, _CHARS)
            )
        else:
            out.append((a, b, int(n) if verified else None))
    return out


def _finalize(section, text, spans, tokens, max_tokens) -> list[ChunkDraft]:
    """Count every chunk; split any chunk over ``max_tokens`` (never truncate).

    ``spans`` are (start, end, known) where ``known`` is the exact measure of
    the slice (``tokens.piece``) or None; the content is the prefix plus the slice.
    """
    drafts: list[ChunkDraft] = []
    prefix = tokens.prefix
    body_limit = max(1, max_tokens - tokens.prefix_tokens)
    last = [-1, -1]  # start and end of the last emitted chunk

    def emit(start: int, end: int, known: int | None) -> None:
        content = prefix + text[start:end]
        n = known + tokens.prefix_tokens if known is not None else tokens.count(content)
        if n <= max_tokens:
            drafts.append(ChunkDraft(section=section, content=content, token_count=n))
            last[:] = [start, end]
            return
        body = None if known is None else n - tokens.prefix_tokens
        pieces = _force_fit(text, start, end, body_limit, tokens, known=body)
        if len(pieces) == 1 and pieces[0][:2] == (start, end):
            pieces = _halves(text, start, end, max_tokens)  # fits alone, not with the prefix
        for a, b, m, verified in pieces:
            emit(a, b, int(m) if verified else None)

    for start, end, known in spans:
        # Keep chunks in text order (an overlap never reaches back past the
        # previous chunk's start) and skip a span the previous chunk contains.
        a, b = _trim(text, max(start, last[0]), end)
        if a >= b or (a >= last[0] and b <= last[1]):
            continue
        emit(a, b, known if (a, b) == (start, end) else None)
    return drafts
