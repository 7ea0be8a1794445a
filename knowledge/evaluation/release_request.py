"""A question asked of one release of a collection (the gate and its question sampling)."""

from __future__ import annotations

from knowledge.models import Release
from knowledge.retrieval.request import RetrievalRequest


def release_request(
    question: str, collection_id: int, release: Release, *, k: int | None = None
) -> RetrievalRequest:
    """``question`` searched in ``release``'s chunk set, without the LLM's reranking: the gate
    compares indexes, and an LLM call per question would only add its noise and cost."""
    return RetrievalRequest(
        question=question,
        collection_ids=[collection_id],
        k=k,
        chunk_profile_id=release.chunk_profile_id,
        embedding_model=release.embedding_model,
        rerank_enabled=False,
    )
