"""The recursive engine every strategy shares: measures (tokens or characters), slicing at
paragraph, line, sentence and word gaps, merging pieces with overlap, and fitting any piece under
the token limit without truncating or dropping text."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

# Gaps between pieces at each level (the pieces are what lies between matches).
PARAGRAPH_GAP = re.compile(r"\n[^\S\n]*\n\s*")
_LINE_GAP = re.compile(r"\n\s*")
SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
SENTENCE_UNIT_GAP = re.compile(r"(?<=[.!?])\s+|\n[^\S\n]*\n\s*|(?<=[。！？])\s*")
_WORD_GAP = re.compile(r"\s+")
WHITESPACE = re.compile(r"\s")

# Recursive levels for token fitting and for the semantic strategy:
# "\n\n", "\n", ". " (any sentence end), " ", and characters as the last resort.
TOKEN_LEVELS = (PARAGRAPH_GAP, _LINE_GAP, SENTENCE_GAP, _WORD_GAP)
# Levels for cutting an oversize sentence to a character budget.
CHAR_LEVELS = (_LINE_GAP, _WORD_GAP)

# Below this average piece length (characters) pieces are not counted one by
# one: their token counts are estimated and the packed chunk is verified.
_ESTIMATE_BELOW_CHARS = 120
# Token-measured chunks are also kept under (token budget * this) characters: a
# long run without spaces can be a single [UNK] token and would otherwise stay
# whole (semantic strategy); longer pieces are split without being counted.
MAX_CHARS_PER_TOKEN = 10
# Characters counted to estimate tokens per character of a long slice.
_SAMPLE_CHARS = 4000
# In the fixed strategy a window end moves back to whitespace found in its last 20 %.
FIXED_BACKTRACK = 0.2
# A span over its token budget is cut again at (its length * budget / its tokens * this): tokens per
# character are uneven along a text, so aiming 10 % under the proportional length makes the next count
# fit on the first try far more often than not, and each extra count costs a tokenizer pass.
RECUT_MARGIN = 0.9

# (start, end, size, verified): a slice of the section text; ``size`` is its
# measure (tokens or characters), exact when ``verified`` else an estimate.
_Span = tuple[int, int, float, bool]


class Tokens:
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


CHARS = _Chars()


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def skip_ws(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def gap_pieces(text: str, start: int, end: int, gap: re.Pattern) -> list[tuple[int, int]]:
    """Non-empty, trimmed slices of text[start:end] between matches of ``gap``."""
    out = []
    pos = start
    for match in gap.finditer(text, start, end):
        a, b = trim(text, pos, match.start())
        if a < b:
            out.append((a, b))
        pos = max(pos, match.end())
    a, b = trim(text, pos, end)
    if a < b:
        out.append((a, b))
    return out


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
            if not window and overlap and isinstance(m, Tokens):
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
    length = int((end - start) * budget / n * RECUT_MARGIN)
    for _ in range(3):
        t = tail_start(text, start, end, length)
        if t is None:
            return None
        sentence = SENTENCE_GAP.search(text, t, end)
        if sentence is not None and end - sentence.end() >= (end - t) // 2:
            t = sentence.end()
        if t >= end:
            return None
        tail_tokens = m.piece(t, end)
        if tail_tokens <= budget:
            return (t, end, tail_tokens, False)
        length = int((end - t) * budget / tail_tokens * RECUT_MARGIN)
    return None


@dataclass(frozen=True)
class SplitRules:
    """How ``split_recursive`` splits: at the gaps of ``levels``, coarsest first (characters the last
    resort), into spans whose ``measure`` (``Tokens`` or ``CHARS``) is at most ``size``, consecutive
    spans sharing up to ``overlap`` of it."""

    levels: Sequence[re.Pattern]
    size: float
    overlap: float
    measure: Tokens | _Chars


def split_recursive(
    text: str,
    start: int,
    end: int,
    rules: SplitRules,
    known: int | None = None,
    ratio_hint: float | None = None,
) -> list[_Span]:
    """Split the trimmed slice text[start:end] into spans whose measure is <= ``rules.size``.

    The first level whose gap occurs splits the slice; fitting pieces are packed
    with the overlap; oversize pieces recurse with the remaining levels, and
    characters are the last resort. With the token measure, packed spans of more
    than one piece are estimates (sums) unless the pieces were tiny, in which
    case the packed span was counted.
    """
    if known is not None and known <= rules.size:
        return [(start, end, known, True)]
    pieces: list[tuple[int, int]] = []
    finer = rules
    for i, gap in enumerate(rules.levels):
        pieces = gap_pieces(text, start, end, gap)
        if len(pieces) != 1:
            finer = replace(rules, levels=rules.levels[i + 1 :])
            break
    else:
        return _cut_chars(text, start, end, rules.size, rules.measure, known)
    if not pieces:
        return []
    if isinstance(rules.measure, Tokens) and (end - start) / len(pieces) < _ESTIMATE_BELOW_CHARS:
        cut = _PieceSlice(text, start, end, pieces, finer)
        return _split_small_pieces(cut, known=known, ratio_hint=ratio_hint)
    return _pack_pieces(text, pieces, finer)


@dataclass(frozen=True)
class _PieceSlice:
    """The slice text[start:end] cut into ``pieces`` at one gap level, with the rules that pack them
    (their ``levels`` the finer ones left, for a piece over the size)."""

    text: str
    start: int
    end: int
    pieces: list[tuple[int, int]]
    rules: SplitRules


def _split_small_pieces(cut: _PieceSlice, *, known: int | None, ratio_hint: float | None) -> list[_Span]:
    """Small pieces (words, short lines) are not counted one by one: their tokens are estimated
    from a measured tokens-per-character ratio and only the packed spans are counted."""
    ratio = ratio_hint
    measure = cut.rules.measure
    if known is None and ratio is None and cut.end - cut.start <= _SAMPLE_CHARS:
        known = measure.piece(cut.start, cut.end)
        if known <= cut.rules.size:
            return [(cut.start, cut.end, known, True)]
    if known is not None:
        ratio = known / (sum(b - a for a, b in cut.pieces) or 1)
    elif ratio is None:
        # Long slice: estimate tokens per character from its beginning.
        k = 0
        while k < len(cut.pieces) - 1 and cut.pieces[k][1] - cut.start < _SAMPLE_CHARS:
            k += 1
        sample = cut.pieces[: k + 1]
        ratio = measure.piece(cut.start, sample[-1][1]) / (sum(b - a for a, b in sample) or 1)
    return _split_estimated(cut.text, cut.pieces, cut.rules, ratio)


def _pack_pieces(text, pieces, rules: SplitRules) -> list[_Span]:
    """Measure each piece; pack those that fit, split the others with the remaining levels."""
    size, overlap, m = rules.size, rules.overlap, rules.measure
    out: list[_Span] = []
    good: list[_Span] = []

    def flush() -> None:
        out.extend(_merge(text, good, size, overlap, m))
        good.clear()

    # A token-measured piece this long is split without being counted first: it
    # almost surely exceeds ``size``, and the semantic character cap would split it.
    too_long = size * MAX_CHARS_PER_TOKEN if isinstance(m, Tokens) else None
    for a, b in pieces:
        if too_long is not None and b - a > too_long:
            flush()
            out.extend(split_recursive(text, a, b, rules))
            continue
        n = m.piece(a, b)
        if n <= size:
            good.append((a, b, n, True))
        else:
            flush()
            out.extend(split_recursive(text, a, b, rules, known=n))
    flush()
    return out


def _split_estimated(text, pieces, rules: SplitRules, ratio) -> list[_Span]:
    """Pack tiny pieces by estimated token counts, counting each packed span."""
    size, m = rules.size, rules.measure
    out: list[_Span] = []
    run: list[_Span] = []
    for a, b in pieces:
        estimate = (b - a) * ratio
        if estimate > size / 2:
            n = m.piece(a, b)
            if n > size:
                out.extend(_pack_counted(text, run, rules))
                run = []
                out.extend(split_recursive(text, a, b, rules, known=n))
                continue
            run.append((a, b, n, True))
        else:
            run.append((a, b, estimate, False))
    out.extend(_pack_counted(text, run, rules))
    return out


def _pack_counted(text, items, rules: SplitRules) -> list[_Span]:
    """Greedy packing of items by estimated size; every packed span is counted.

    When a count shows the estimate was low, the span loses items from its end
    (they go to the next span); estimates are rescaled by the last count. The
    next span repeats trailing items of the previous one worth <= the overlap.
    """
    size, m = rules.size, rules.measure
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
        k, tail = _counted_overlap(text, items, i, prev, est, scale, rules)
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
            out.extend(split_recursive(text, items[i][0], items[i][1], rules, known=n))
            prev = None
        i = j
    return out


def _counted_overlap(text, items, i, prev, est, scale, rules: SplitRules) -> tuple[int, _Span | None]:
    """Where the span after ``prev`` starts: (first repeated item, None) when trailing whole items
    of ``prev`` fit the overlap, else (``i``, the tail of the previous span's last item or None)."""
    overlap = rules.overlap
    if prev is None or not overlap:
        return i, None
    for k0 in range(prev[0] + 1, prev[1]):
        if est(k0, prev[1]) <= overlap:
            return k0, None
    last = items[i - 1]
    return i, _token_tail(text, (last[0], last[1], last[2] * scale, False), overlap, rules.measure)


def _cut_chars(text, start, end, size, m, known) -> list[_Span]:
    """Last resort for a slice without whitespace (a URL, base64, CJK run)."""
    if not isinstance(m, Tokens):
        step = max(1, int(size))
        return [(a, min(a + step, end), min(a + step, end) - a, True) for a in range(start, end, step)]
    total = known if known is not None else m.piece(start, end)
    if total <= size:
        return [(start, end, total, True)]
    step = max(1, int((end - start) * size / total * RECUT_MARGIN))
    out: list[_Span] = []
    pos = start
    while pos < end:
        cut = min(end, pos + step)
        n = m.piece(pos, cut)
        while n > size and cut - pos > 1:
            cut = pos + max(1, min(cut - pos - 1, int((cut - pos) * size / n * RECUT_MARGIN)))
            n = m.piece(pos, cut)
        out.append((pos, cut, n, True))
        pos = cut
    return out


def _fit_tokens(text, start, end, limit, tokens, known=None, ratio_hint=None) -> list[_Span]:
    """Split a slice into spans of at most ``limit`` tokens, no overlap."""
    return split_recursive(text, start, end, SplitRules(TOKEN_LEVELS, limit, 0, tokens), known, ratio_hint)


def force_fit(text, start, end, limit, tokens, known=None, ratio_hint=None) -> list[_Span]:
    """Like ``_fit_tokens`` but always makes progress on a slice over ``limit``.

    If the token split returns the slice unchanged (a tokenizer whose counts do
    not add up over whitespace), the slice is halved instead.
    """
    pieces = _fit_tokens(text, start, end, limit, tokens, known=known, ratio_hint=ratio_hint)
    if len(pieces) == 1 and pieces[0][:2] == (start, end) and not (pieces[0][3] and pieces[0][2] <= limit):
        return split_in_halves(text, start, end, limit)
    return pieces


def split_in_halves(text, start, end, limit) -> list[_Span]:
    """Two halves of a slice, cut at a space near the middle if there is one."""
    if end - start <= 1:
        raise ValueError(f"a single character exceeds the token limit ({limit})")
    mid = (start + end) // 2
    space = text.rfind(" ", start + 1, mid + 1)
    mid = space if space > start + (end - start) // 4 else mid
    pieces = []
    for a, b in ((start, mid), (mid, end)):
        a, b = trim(text, a, b)
        if a < b:
            pieces.append((a, b, 0, False))
    return pieces


def tail_start(text: str, start: int, end: int, length: int) -> int | None:
    """Start of the last ``length`` characters of text[start:end], at a word start."""
    if length <= 0:
        return None
    t = max(start, end - length)
    if t > start and not text[t - 1].isspace() and not text[t].isspace():
        match = WHITESPACE.search(text, t, end)
        if match is None:
            return None
        t = match.start()
    t = skip_ws(text, t, end)
    return t if t < end else None
