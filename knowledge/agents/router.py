"""The router (docs/design.md#agents): which documents can answer the question, chosen from their summaries.

Candidates are the ready, summarised documents the user may read in the
searched collections (knowledge.access decides). With an LLM, it picks from a
numbered list and must answer with those ids: an id not on the list is
dropped and counted, never turned into a document. Without an LLM, or when
its reply holds no valid id, documents are ranked by the similarity of their
summary's embedding to the question, inside the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pgvector.django import CosineDistance

from config.base.validation import id_or_none
from knowledge.access import readable_documents
from knowledge.clients.llm import LLMError
from knowledge.models import DocumentSummary
from knowledge.text.json_reply import json_object

# The LLM sees at most this many summaries: the closest by embedding.
LLM_CANDIDATES = 40
SUMMARY_CHARS = 400

ROUTE_PROMPT = (
    "Pick the documents most likely to contain what the question needs, from the numbered list. "
    "Pick at most {top_k}, best first; pick fewer if fewer are relevant. Use only ids from the list. "
    'Reply with JSON only: {{"document_ids": [id, ...]}}'
)


@dataclass
class Route:
    document_ids: list[int]
    method: str  # all | llm | embedding | none
    candidates: int
    note: str = ""
    dropped_ids: list = field(default_factory=list)

    def as_detail(self) -> dict:
        return {
            "document_ids": self.document_ids,
            "candidates": self.candidates,
            "dropped_ids": self.dropped_ids,
        }


def route(*, question: str, vector: np.ndarray, user, collection_ids, top_k: int, ask) -> Route:
    summaries = _candidates(user, collection_ids, vector)
    total = summaries.count()
    if total == 0:
        return Route([], "none", 0, note="no summarised document to route to: searching everything")
    if total <= top_k:
        return Route(list(summaries.values_list("document_id", flat=True)), "all", total)
    ranked = list(summaries.select_related("document")[:LLM_CANDIDATES])
    by_embedding = [s.document_id for s in ranked[:top_k]]
    if ask is None:
        return Route(by_embedding, "embedding", total)
    try:
        chosen, dropped = _llm_choice(question, ranked, top_k, ask)
    except (LLMError, ValueError) as exc:
        return Route(by_embedding, "embedding", total, note=f"LLM routing unusable: {exc}")
    if not chosen:
        return Route(
            by_embedding, "embedding", total, note="the LLM named no listed document", dropped_ids=dropped
        )
    return Route(chosen, "llm", total, dropped_ids=dropped)


def _candidates(user, collection_ids, vector):
    documents = readable_documents(user=user, collection_ids=collection_ids)
    return DocumentSummary.objects.filter(document__in=documents).order_by(
        CosineDistance("embedding", vector)
    )


def _llm_choice(question, ranked, top_k, ask) -> tuple[list[int], list]:
    listing = "\n".join(_listing(s) for s in ranked)
    messages = [
        {"role": "system", "content": ROUTE_PROMPT.format(top_k=top_k)},
        {"role": "user", "content": f"Question: {question}\n\nDocuments:\n{listing}"},
    ]
    reply = ask("route", messages, max_tokens=20 + 8 * top_k)
    raw = json_object(reply.text).get("document_ids")
    if not isinstance(raw, list):
        raise ValueError("'document_ids' must be a list")
    listed = {s.document_id for s in ranked}
    chosen, dropped = [], []
    for item in raw:
        document_id = _as_id(item)
        if document_id in listed and document_id not in chosen:
            chosen.append(document_id)
        elif document_id not in chosen:
            dropped.append(item)
    return chosen[:top_k], dropped


def _as_id(item) -> int | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return item
    if isinstance(item, str):
        return id_or_none(item.strip().lstrip("#"))
    return None


def _listing(summary: DocumentSummary) -> str:
    text = " ".join(summary.router_text().split())[:SUMMARY_CHARS]
    return f"[{summary.document_id}] {summary.document.filename}: {text}"
