"""The four strategies (paragraph, sentence, fixed, semantic) and the chunk drafts they make."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.ingestion.chunking.engine import (
    CHAR_LEVELS,
    CHARS,
    FIXED_BACKTRACK,
    MAX_CHARS_PER_TOKEN,
    PARAGRAPH_GAP,
    RECUT_MARGIN,
    SENTENCE_GAP,
    SENTENCE_UNIT_GAP,
    TOKEN_LEVELS,
    WHITESPACE,
    SplitRules,
    Tokens,
    force_fit,
    gap_pieces,
    skip_ws,
    split_in_halves,
    split_recursive,
    tail_start,
    trim,
)
from knowledge.ingestion.types import ChunkDraft

# A paragraph up to half again ``chunk_size`` stays one unit (the paragraph strategy's rule,
# knowledge.ingestion.chunking): cutting it at sentences would leave a full chunk and a stub.
LONG_PARAGRAPH_FACTOR = 1.5
# A lone unit whose estimated tokens (by the last counted ratio) pass the limit by this much is surely
# over it: it is split without being counted first, saving a tokenizer pass over a long text.
SURELY_OVER_FACTOR = 1.5
# An overlap that makes a chunk too long loses the excess tokens' characters (by the ratio) and 20 % more:
# the ratio is an average, and trimming just the estimate would often need a second count and cut.
OVERLAP_TRIM_MARGIN = 1.2
# An overlap is fitted to 95 % of the room the first unit leaves, a little slack for the ratio's error.
OVERLAP_ROOM_MARGIN = 0.95
# A fixed window narrowed to the token limit by the last ratio aims 3 % under it, for the same reason.
FIXED_WINDOW_MARGIN = 0.97


def chunk_section(section, strategy, chunk_size, chunk_overlap, count, max_tokens):
    text = section.text or ""
    if not text.strip():
        return []
    prefix, prefix_tokens = "", 0
    table = bool(section.metadata.get("table") or section.metadata.get("grid"))
    # A table's caption starts each of its chunks (as its headers start each row): a passage of
    # rows says which table it is from wherever it is cited.
    if strategy == "semantic" or table:
        prefix, prefix_tokens = _heading_prefix(section.heading_path, count, max_tokens)
    tokens = Tokens(text, count, prefix, prefix_tokens)
    if table:
        spans = _rows(text, chunk_size, chunk_overlap, tokens, max_tokens)
    elif strategy == "paragraph":
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
    spans = split_recursive(text, start, end, SplitRules(CHAR_LEVELS, size, 0, CHARS))
    return [(a, b) for a, b, _n, _v in spans]


def _paragraph(text, size, overlap, tokens, max_tokens) -> list[tuple[int, int, int | None]]:
    paragraphs = gap_pieces(text, 0, len(text), PARAGRAPH_GAP)
    if len(text) > 3 * size and len(paragraphs) < 3:
        return _fixed(text, size, overlap, tokens, max_tokens)
    units: list[tuple[int, int]] = []
    for a, b in paragraphs:
        if b - a <= size * LONG_PARAGRAPH_FACTOR:
            units.append((a, b))
            continue
        for s, e in gap_pieces(text, a, b, SENTENCE_GAP):
            units.extend([(s, e)] if e - s <= size else _char_units(text, s, e, size))
    return _pack_units(text, units, _Packing(size, overlap, max_tokens, tokens, tail_overlap=True))


def _sentence(text, size, overlap, tokens, max_tokens) -> list[tuple[int, int, int | None]]:
    units: list[tuple[int, int]] = []
    for a, b in gap_pieces(text, 0, len(text), SENTENCE_UNIT_GAP):
        units.extend([(a, b)] if b - a <= size else _char_units(text, a, b, size))
    return _pack_units(text, units, _Packing(size, overlap, max_tokens, tokens, tail_overlap=False))


def _rows(text, size, overlap, tokens, max_tokens) -> list[tuple[int, int, int | None]]:
    """A table, one row per line: whole rows packed, whole rows overlapping, whatever the strategy (a
    row cut in two loses its headers or its values). Only a row longer than a chunk is cut."""
    units: list[tuple[int, int]] = []
    for row in re.finditer(r"[^\n]+", text):
        a, b = row.span()
        units.extend([(a, b)] if b - a <= size else _char_units(text, a, b, size))
    return _pack_units(text, units, _Packing(size, overlap, max_tokens, tokens, tail_overlap=False))


@dataclass(frozen=True)
class _Packing:
    """How ``_pack_units`` packs: chunks of at most ``size`` characters and ``max_tokens`` tokens
    (measured by ``tokens``), sharing ``overlap`` characters as ``tail_overlap`` says."""

    size: int
    overlap: int
    max_tokens: int
    tokens: Tokens
    tail_overlap: bool


def _pack_units(text, units, packing: _Packing):
    """Pack consecutive units into chunks of <= size characters and <= max_tokens.

    ``tail_overlap`` (paragraph): the last ``overlap`` characters of the previous
    chunk, from a word start, are prepended and ``size`` bounds the new units
    only. Otherwise (sentence): whole trailing units of the previous chunk
    spanning <= ``overlap`` characters are repeated and ``size`` bounds the
    whole chunk. Token sizes are estimated from the last counted chunk's tokens
    per character and each chunk is counted once (again only when the estimate
    was too low); a single unit over ``max_tokens`` is split by tokens.
    """
    size, max_tokens = packing.size, packing.max_tokens
    work: list[tuple[int, int, int | None]] = [(a, b, None) for a, b in units]
    out: list[tuple[int, int, int | None]] = []
    ratio: float | None = None  # tokens per character of the last counted chunk
    prev: tuple[int, int, int, int] | None = None  # start, end, first unit, stop unit
    i = 0
    while i < len(work):
        ov_pos, ov_unit = _unit_overlap(text, work, i, prev, ratio, packing)
        j_cap = len(work)
        while True:
            start = work[ov_unit][0] if ov_unit is not None else ov_pos if ov_pos is not None else work[i][0]
            base = work[i][0] if packing.tail_overlap else start
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
            elif alone and ratio is not None and (end - start) * ratio > SURELY_OVER_FACTOR * max_tokens:
                n = None  # surely over the limit: split it without counting it first
            else:
                n = packing.tokens.piece(start, end)
                ratio = n / max(1, end - start)
            if n is not None and n <= max_tokens:
                break
            if j > i + 1:
                j_cap = j - 1  # fewer units (the new ratio usually drops several)
            elif ov_unit is not None:
                ov_unit = ov_unit + 1 if ov_unit + 1 < i else None
            elif ov_pos is not None:
                keep = int((prev[1] - ov_pos) - (n - max_tokens) / ratio * OVERLAP_TRIM_MARGIN) - 1
                ov_pos = tail_start(text, ov_pos, prev[1], keep)
            else:
                _unit_split(text, work, i, n, ratio, packing)
                j_cap = len(work)
        out.append((start, end, n))
        prev = (start, end, i if ov_unit is None else ov_unit, j)
        i = j
    return out


def _unit_overlap(text, work, i, prev, ratio, packing: _Packing):
    """(tail overlap start, first repeated unit) for the chunk starting at unit ``i``; None where none.

    Left out, or shortened, when it would not fit the tokens (by the last counted ratio).
    """
    overlap, size, max_tokens = packing.overlap, packing.size, packing.max_tokens
    ov_pos: int | None = None  # tail overlap start
    ov_unit: int | None = None  # first repeated unit
    if prev is not None and overlap:
        if packing.tail_overlap:
            ov_pos = tail_start(text, prev[0], prev[1], overlap)
        else:
            last_end = work[prev[3] - 1][1]
            for k in range(prev[2], prev[3]):
                if last_end - work[k][0] <= overlap:
                    ov_unit = k
                    break
            while ov_unit is not None and work[i][1] - work[ov_unit][0] > size:
                ov_unit = ov_unit + 1 if ov_unit + 1 < i else None
    if ratio is not None and (ov_pos is not None or ov_unit is not None):
        s0, e0, known0 = work[i]
        room = max_tokens - (known0 if known0 is not None else (e0 - s0) * ratio)
        if ov_pos is not None and (prev[1] - ov_pos) * ratio > room:
            ov_pos = tail_start(text, ov_pos, prev[1], int(room / ratio * OVERLAP_ROOM_MARGIN))
        while ov_unit is not None and (s0 - work[ov_unit][0]) * ratio > room:
            ov_unit = ov_unit + 1 if ov_unit + 1 < i else None
    return ov_pos, ov_unit


def _unit_split(text, work, i, n, ratio, packing: _Packing) -> None:
    """Unit ``i`` alone is over the limit: split it in ``work`` by tokens, keeping room for the
    overlap that the next pieces will carry."""
    overlap, max_tokens = packing.overlap, packing.max_tokens
    reserve = min(max_tokens // 2, int(overlap * ratio)) if overlap else 0
    s0, e0, _known = work[i]
    known = n if reserve == 0 else None
    pieces = force_fit(text, s0, e0, max_tokens - reserve, packing.tokens, known=known, ratio_hint=ratio)
    work[i : i + 1] = [(a, b, int(m) if v else None) for a, b, m, v in pieces]


def _window_end(text: str, pos: int, window: int) -> int:
    end = pos + window
    if end >= len(text):
        return len(text)
    if text[end].isspace() or text[end - 1].isspace():
        return end
    low = max(pos + 1, end - max(1, int(window * FIXED_BACKTRACK)))
    best = max(text.rfind(c, low, end) for c in " \n\t\r\f\v\xa0\u3000")
    return best if best > pos else end


def _fixed(text, size, overlap, tokens, max_tokens) -> list[tuple[int, int, int | None]]:
    length = len(text)
    out = []
    pos = skip_ws(text, 0, length)
    ratio: float | None = None  # tokens per character of the last counted window
    while pos < length:
        window = size
        if ratio is not None and ratio * size > max_tokens:
            window = max(1, int(max_tokens / ratio * FIXED_WINDOW_MARGIN))
        while True:
            end = _window_end(text, pos, window)
            a, b = trim(text, pos, end)
            n = tokens.piece(a, b)
            ratio = n / max(1, b - a)
            if n <= max_tokens or b - a <= 1:
                break
            window = max(1, min(window - 1, int((b - a) * max_tokens / n * RECUT_MARGIN)))
        out.append((a, b, n))
        if skip_ws(text, end, length) >= length:
            break
        step_overlap = overlap if window == size else overlap * window // size
        nxt = max(end - step_overlap, pos + 1)
        if nxt < end and not text[nxt - 1].isspace() and not text[nxt].isspace():
            match = WHITESPACE.search(text, nxt, end)
            nxt = match.start() if match else end
        pos = skip_ws(text, nxt, length)
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
            line = line[: max(0, min(len(line) - 1, int(len(line) * budget / n * RECUT_MARGIN)))].rstrip()
            if not line:
                return "", 0


def _semantic(text, size, overlap, tokens, max_tokens, prefix_tokens):
    body = min(size, max_tokens) - prefix_tokens
    if body < 1:
        body = max(1, min(size, max_tokens - prefix_tokens))
    spans = split_recursive(text, 0, len(text), SplitRules(TOKEN_LEVELS, body, overlap, tokens))
    char_cap = body * MAX_CHARS_PER_TOKEN
    out = []
    for a, b, n, verified in spans:
        if b - a > char_cap:
            by_chars = split_recursive(text, a, b, SplitRules(TOKEN_LEVELS, char_cap, 0, CHARS))
            out.extend((x, y, None) for x, y, _n, _v in by_chars)
        else:
            out.append((a, b, int(n) if verified else None))
    return out


def _rows_held(rows, text: str, start: int, end: int, prefix_chars: int) -> dict:
    """The table rows whose lines lie in text[start:end], each with where its line starts in the
    chunk's content: the reader draws the chunk as a grid and marks the cited row."""
    held = []
    for offset, number, cells in rows:
        line_end = text.find("\n", offset)
        line_end = len(text) if line_end < 0 else line_end
        if offset < end and line_end > start:
            held.append([number, list(cells), prefix_chars + max(0, offset - start)])
    return {"cells": held} if held else {}


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
            metadata = _rows_held(section.rows, text, start, end, len(prefix))
            drafts.append(ChunkDraft(section=section, content=content, token_count=n, metadata=metadata))
            last[:] = [start, end]
            return
        body = None if known is None else n - tokens.prefix_tokens
        pieces = force_fit(text, start, end, body_limit, tokens, known=body)
        if len(pieces) == 1 and pieces[0][:2] == (start, end):
            pieces = split_in_halves(text, start, end, max_tokens)  # fits alone, not with the prefix
        for a, b, m, verified in pieces:
            emit(a, b, int(m) if verified else None)

    for start, end, known in spans:
        # Keep chunks in text order (an overlap never reaches back past the
        # previous chunk's start) and skip a span the previous chunk contains.
        a, b = trim(text, max(start, last[0]), end)
        if a >= b or (a >= last[0] and b <= last[1]):
            continue
        emit(a, b, known if (a, b) == (start, end) else None)
    return drafts
