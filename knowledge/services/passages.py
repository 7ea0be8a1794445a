"""A cited place in full: every chunk at one source reference, with its neighbours.

Citations point at one chunk (``chunk_id``) or at a place (``source_ref``
such as ``page=4`` or ``heading=Methods``); a reader following one wants the
whole place and a little around it, in reading order. Reads go through
knowledge.access, so an unreadable passage is "not found" like a missing one.
"""

from __future__ import annotations

from config.base.errors import KnowledgeError, NotFoundError
from knowledge.access import chunk_for_reader, document_for_reader
from knowledge.models import Chunk, Document
from knowledge.retrieval.passages import source_url

MAX_NEIGHBOURS = 3
MAX_PLACE_CHUNKS = 20  # a very long section is cut here (and says so)
MAX_OVERLAP_CHARS = 500  # chunking overlaps are 200 characters by default


def passage_get(
    *, user, chunk_id: int | None = None, document_id: int | None = None, source_ref: str = "", neighbours=1
) -> dict:
    """The place a citation points at: by ``chunk_id``, or by ``document_id`` and ``source_ref``."""
    if not 0 <= neighbours <= MAX_NEIGHBOURS:
        raise KnowledgeError(f"neighbours must be between 0 and {MAX_NEIGHBOURS}")
    cited = _cited_chunk(user, chunk_id, document_id, source_ref)
    document = cited.document
    place = list(
        _chunk_set(cited).filter(source_ref=cited.source_ref).order_by("index")[: MAX_PLACE_CHUNKS + 1]
    )
    truncated = len(place) > MAX_PLACE_CHUNKS
    place = place[:MAX_PLACE_CHUNKS]
    return {
        "document": _document_dict(document),
        "source_ref": cited.source_ref,
        "page": cited.page,
        "url": source_url(cited),
        "cited_chunk_id": cited.pk,
        "chunk_ids": [chunk.pk for chunk in place],
        "text": joined_text([chunk.content for chunk in place]),
        "truncated": truncated,
        "before": [_neighbour(c) for c in _around(cited, place[0].index, -neighbours)],
        "after": [_neighbour(c) for c in _around(cited, place[-1].index, neighbours)],
    }


def _cited_chunk(user, chunk_id, document_id, source_ref: str) -> Chunk:
    if chunk_id is not None:
        chunk = chunk_for_reader(user=user, chunk_id=chunk_id)
        if document_id is not None and chunk.document_id != document_id:
            raise NotFoundError("no such passage in this document")
        return chunk
    if document_id is None or not (source_ref or "").strip():
        raise KnowledgeError("give a chunk id, or a document id and a source_ref such as page=3")
    document = document_for_reader(user=user, document_id=document_id)
    chunk = (
        Chunk.objects.filter(
            document=document,
            chunk_profile_id=document.collection.chunk_profile_id,
            embedding_model=document.collection.embedding_model,
            source_ref=source_ref.strip(),
        )
        .select_related("document")
        .order_by("index")
        .first()
    )
    if chunk is None:
        raise NotFoundError(f"no passage at {source_ref.strip()} in {document.filename}")
    return chunk


def _chunk_set(chunk: Chunk):
    """The chunks made with the cited chunk's profile and model: the set its index belongs to."""
    return Chunk.objects.filter(
        document_id=chunk.document_id,
        chunk_profile_id=chunk.chunk_profile_id,
        embedding_model=chunk.embedding_model,
    )


def _around(cited: Chunk, index: int, count: int) -> list[Chunk]:
    if count == 0:
        return []
    chunks = _chunk_set(cited)
    if count < 0:
        return list(chunks.filter(index__lt=index).order_by("-index")[:-count])[::-1]
    return list(chunks.filter(index__gt=index).order_by("index")[:count])


def _neighbour(chunk: Chunk) -> dict:
    return {"chunk_id": chunk.pk, "source_ref": chunk.source_ref, "page": chunk.page, "text": chunk.content}


def _document_dict(document: Document) -> dict:
    return {
        "id": document.pk,
        "filename": document.filename,
        "title": document.display_title,
        "collection_id": document.collection_id,
    }


def joined_text(contents: list[str]) -> str:
    """Consecutive chunks as one text: the overlap each chunk repeats from the last is dropped."""
    text = ""
    for content in contents:
        if not text:
            text = content
            continue
        overlap = _overlap(text, content)
        text += content[overlap:] if overlap else "\n" + content
    return text


def _overlap(previous: str, following: str) -> int:
    """The length of the longest start of ``following`` that ``previous`` ends with (0 if short)."""
    for size in range(min(len(previous), len(following), MAX_OVERLAP_CHARS), 20, -1):
        if previous.endswith(following[:size]):
            return size
    return 0
