r"""Sections -> chunk drafts (pure: no Django, no database).

Every strategy works on one ``Section`` at a time, so a chunk never spans two
sections. ``chunk_size`` / ``chunk_overlap`` are characters for the first
three strategies and model tokens for ``semantic``:

* ``paragraph`` (default): split on blank lines and combine
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
* ``semantic`` (heading-aware, docs/design.md#chunking): the section is one heading's text (stage 1); it is
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

from collections.abc import Callable, Sequence

from knowledge.ingestion.chunking.strategies import chunk_section
from knowledge.ingestion.limits import LimitExceeded
from knowledge.ingestion.types import ChunkDraft, Section

STRATEGIES = ("paragraph", "sentence", "fixed", "semantic")
DEFAULT_MAX_TOKENS = 254


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
        drafts.extend(chunk_section(section, strategy, chunk_size, chunk_overlap, count_tokens, max_tokens))
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
