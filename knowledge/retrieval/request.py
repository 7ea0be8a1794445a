"""What one retrieval is asked for: the question, the scope it searches and how (``retrieve`` takes it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from knowledge.access import QuestionScope


@dataclass(frozen=True)
class RetrievalRequest:
    """One question and its search settings; who asks is given beside it.

    ``asked`` is the scope an edge resolved and checked (knowledge.access.question_scope_checked),
    with the chunk sets it searches read once: every search of one answer reads the same release of
    each collection, even when one is promoted meanwhile (``QuestionScope.on_chunk_set`` searches a
    candidate release or another chunk profile instead). ``k`` replaces maxDocs for this call;
    ``overrides`` are per-call parameter values (evaluation runs) applied above the profile but below
    admin locks; ``document_ids`` narrows the search to those documents inside the SQL (multi-step
    retrieval), within the scope; ``rerank_enabled=False`` skips the profile's reranking (to measure
    what it changes).
    """

    question: str
    asked: QuestionScope
    k: int | None = None
    overrides: Mapping | None = None
    document_ids: Iterable[int] | None = None
    rerank_enabled: bool = True
