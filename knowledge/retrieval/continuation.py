"""A passage is read on: into the next chunk of its section when it has no sentence of its own,
and into the page's next-best retrieved chunk.

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

from collections.abc import Callable, Sequence

from knowledge.models import Chunk
from knowledge.retrieval.service import RetrievedChunk


def with_continuations(
    sources: list[RetrievedChunk],
    *,
    says_nothing: Callable[[Chunk], bool],
    runners_up: Sequence[RetrievedChunk] = (),
) -> list[RetrievedChunk]:
    """``sources`` followed by what continues their primary chunks: the next chunk of each one for
    which ``says_nothing``, and each one's page's next-best retrieved chunk (``runners_up``, see
    knowledge.retrieval.scoring.same_source_runners_up), numbered after the sources."""
    primary = [s for s in sources if s.role == "primary" and s.source_number]
    following = [(s, _next_chunk(s.chunk)) for s in primary if says_nothing(s.chunk)]
    by_page = {_page(s.chunk): s for s in primary}
    following += [(by_page[_page(r.chunk)], r.chunk) for r in runners_up if _page(r.chunk) in by_page]
    present = {s.chunk.pk for s in sources}
    number = max((s.source_number or 0 for s in sources), default=0)
    added = []
    for source, chunk in following:
        if chunk is None or chunk.pk in present:
            continue
        number += 1
        present.add(chunk.pk)
        scores = {"continues": source.source_number}
        added.append(RetrievedChunk(chunk, scores, role="continuation", source_number=number))
    return sources + added


def _page(chunk: Chunk) -> tuple[int, str]:
    return chunk.document_id, chunk.source_ref


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
