"""A passage with no sentence of its own is read on into the next chunk of its section.

A paper's first chunk is often only its title block (title, authors, e-mail
addresses) and a section's first chunk only its heading: they rank high, being
about the question's subject, but say nothing; what they head is in the next
chunk of the same page or section (the abstract, the section's first
paragraph). An extracted answer quotes sentences, so it is given that next
chunk too, numbered after the context's sources. Only chunks of the same
document, chunk profile and source reference are read: nothing the searched
scope did not already hold.
"""

from __future__ import annotations

from collections.abc import Callable

from knowledge.models import Chunk
from knowledge.retrieval.service import RetrievedChunk


def with_continuations(
    sources: list[RetrievedChunk], *, says_nothing: Callable[[Chunk], bool]
) -> list[RetrievedChunk]:
    """``sources`` followed by the next chunk of each primary source for which ``says_nothing``."""
    silent = [s for s in sources if s.role == "primary" and s.source_number and says_nothing(s.chunk)]
    if not silent:
        return sources
    present = {s.chunk.pk for s in sources}
    number = max(s.source_number or 0 for s in sources)
    added = []
    for source in silent:
        following = _next_chunk(source.chunk)
        if following is None or following.pk in present:
            continue
        number += 1
        present.add(following.pk)
        scores = {"continues": source.source_number}
        added.append(RetrievedChunk(following, scores, role="continuation", source_number=number))
    return sources + added


def _next_chunk(chunk: Chunk) -> Chunk | None:
    return (
        Chunk.objects.select_related("document")
        .defer("embedding", "search_vector")
        .filter(
            document_id=chunk.document_id,
            chunk_profile_id=chunk.chunk_profile_id,
            embedding_model=chunk.embedding_model,
            index=chunk.index + 1,
            source_ref=chunk.source_ref,
        )
        .first()
    )
