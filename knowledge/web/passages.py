"""A cited section's text for the source viewer: each overlap shown once, the quoted sentence marked.

Chunks of one section share their edges (the chunker prepends the end of a chunk to the next
one), so showing every chunk whole repeats about 200 characters at each seam. Here each seam's
text is shown once, by the cited chunk when it is one of the pair (its passage stays whole) and
otherwise by the earlier chunk. Pure functions: chunks in, parts out.
"""

from __future__ import annotations

from dataclasses import dataclass

# A shorter common edge is a coincidence ("the "), not the chunker's overlap.
MIN_OVERLAP = 20


@dataclass(frozen=True)
class PassagePart:
    """One chunk's share of the section: ``before`` + ``quote`` + ``after`` is the text shown."""

    chunk_id: int
    cited: bool
    before: str
    quote: str = ""
    after: str = ""


def overlap_length(earlier: str, later: str) -> int:
    """The length of the longest end of ``earlier`` that ``later`` starts with (0 under MIN_OVERLAP)."""
    probe = later[:MIN_OVERLAP]
    if len(probe) < MIN_OVERLAP:
        return 0
    start = earlier.find(probe)
    while start != -1:
        tail = earlier[start:]
        if later.startswith(tail):
            return len(tail)
        start = earlier.find(probe, start + 1)
    return 0


def section_parts(
    chunks: list, *, cited_id: int | None, quote: tuple[int, int] | None = None
) -> list[PassagePart]:
    """The section's chunks (in order) as parts showing each overlap once, the cited one's quote marked.

    ``quote`` is START, END in the cited chunk's text, which is never cut (its neighbours are).
    """
    texts = [chunk.content for chunk in chunks]
    for index in range(1, len(texts)):
        shared = overlap_length(texts[index - 1], texts[index])
        if not shared:
            continue
        if chunks[index].pk == cited_id:
            texts[index - 1] = texts[index - 1][:-shared]
        else:
            texts[index] = texts[index][shared:]
    return [_part(chunk, text, cited_id, quote) for chunk, text in zip(chunks, texts, strict=True)]


def _part(chunk, text: str, cited_id: int | None, quote: tuple[int, int] | None) -> PassagePart:
    cited = chunk.pk == cited_id
    if not cited or quote is None:
        return PassagePart(chunk.pk, cited, text.strip())
    start, end = quote
    return PassagePart(chunk.pk, cited, text[:start].lstrip(), text[start:end], text[end:].rstrip())
