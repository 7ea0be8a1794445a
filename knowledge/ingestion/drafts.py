"""Bytes in, chunk drafts out: extraction and chunking of one document (pure, no Django).

Run in the extraction process (``extraction_process.py``) while the pipeline
embeds, and in-process where the drafts are wanted without embedding them
(``pipeline.document_chunk_drafts``): both give the same drafts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from knowledge.ingestion.chunking import chunk_sections
from knowledge.ingestion.extract import iter_sections
from knowledge.ingestion.headers import section_header
from knowledge.ingestion.limits import IngestLimits, LimitExceeded
from knowledge.ingestion.types import ChunkDraft, Section
from knowledge.text.word_pieces import MAX_CONTENT_TOKENS, count_tokens

# A header never takes a chunk's budget below this many tokens (headers are capped well under it).
MIN_CONTENT_TOKENS = 128


@dataclass(frozen=True)
class ChunkingOptions:
    """What a chunk profile says about cutting (a plain value: it crosses to the extraction process)."""

    strategy: str
    chunk_size: int
    chunk_overlap: int


def document_drafts(
    *, filename: str, data: bytes, title: str, options: ChunkingOptions, limits: IngestLimits
) -> Iterator[tuple[int, ChunkDraft]]:
    """(section number, chunk draft) as the sections are extracted; raises on the extractor's errors."""
    count = 0
    for number, section in enumerate(iter_sections(filename, data, limits=limits), start=1):
        for draft in section_drafts(section, options, title):
            count += 1
            if count > limits.max_chunks:  # stop before the rest of the document is chunked
                raise LimitExceeded(
                    f"it would make {count:,} chunks or more", limits.max_chunks, "max_chunks", "chunks"
                )
            yield number, draft


def section_drafts(section: Section, options: ChunkingOptions, title: str) -> list[ChunkDraft]:
    """One section's chunks, each with its contextual header, the header's tokens taken from the budget.

    The semantic strategy already opens each chunk with the heading path, so it gets no header.
    """
    header = (
        ""
        if options.strategy == "semantic"
        else section_header(section, title=title, count_tokens=count_tokens)
    )
    # The header and its line break are read by the model too: what is left is the chunk's budget.
    budget = MAX_CONTENT_TOKENS - (count_tokens(header) + 1 if header else 0)
    drafts = chunk_sections(
        [section],
        strategy=options.strategy,
        chunk_size=options.chunk_size,
        chunk_overlap=options.chunk_overlap,
        count_tokens=count_tokens,
        max_tokens=max(budget, MIN_CONTENT_TOKENS),
    )
    return [replace(draft, header=header) for draft in drafts]
