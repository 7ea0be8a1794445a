"""What one retrieval is asked for: the question, what it searches and how (``retrieve`` takes it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from knowledge.access import QuestionScope
from knowledge.models import Profile
from knowledge.retrieval.scope import Scope


@dataclass(frozen=True)
class RetrievalRequest:
    """One question and its search settings; who asks is given beside it (the access rule needs it).

    The scope is ``asked``, the one an edge resolved (knowledge.access.question_scope_checked), or else
    the ``profile``'s collections (narrowed to ``collection_ids``) or the ``collection_ids`` alone.
    ``k`` replaces maxDocs for this call; ``overrides`` are per-call parameter values (evaluation runs)
    applied above the profile but below admin locks; ``chunk_profile_id`` and ``embedding_model``
    search that chunk set instead of the serving release's (a candidate release, a non-active
    profile); ``document_ids`` narrows the search to those documents inside the SQL
    (multi-step retrieval), within what access allows; ``rerank_enabled=False`` skips the profile's
    LLM reranking (to measure what it changes); ``scope`` is one an earlier search of the same
    answer pinned (``Scope.pinned``, the asker's and their collections' releases read once), so every
    round of a multi-step answer reads the same release of each collection even when one is promoted
    meanwhile; it replaces the scope ``asked`` and the chunk set fields would give.
    """

    question: str
    asked: QuestionScope | None = None
    profile: Profile | None = None
    collection_ids: Iterable[int] | None = None
    k: int | None = None
    overrides: Mapping | None = None
    chunk_profile_id: int | None = None
    embedding_model: str | None = None
    document_ids: Iterable[int] | None = None
    rerank_enabled: bool = True
    scope: Scope | None = None

    def __post_init__(self):
        if self.scope is not None and not self.scope.collections_pinned:
            raise ValueError("a retrieval request's scope must be pinned (Scope.pinned)")
