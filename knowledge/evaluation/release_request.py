"""A question asked of one release of a collection (the gate and its question sampling)."""

from __future__ import annotations

from knowledge.access import question_scope_checked
from knowledge.models import Release
from knowledge.retrieval.request import RetrievalRequest


def release_request(
    question: str, *, reader, collection_id: int, release: Release, k: int | None = None
) -> RetrievalRequest:
    """``question`` searched by ``reader`` in ``release``'s chunk set, without the LLM's reranking:
    the gate compares indexes, and an LLM call per question would only add its noise and cost."""
    asked = question_scope_checked(user=reader, collection_ids=[collection_id]).on_chunk_set(
        chunk_profile_id=release.chunk_profile_id, embedding_model=release.embedding_model
    )
    return RetrievalRequest(question=question, asked=asked, k=k, rerank_enabled=False)
