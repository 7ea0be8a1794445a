"""The agentic loop's searches: the whole scope, inside a plan step's documents, or inside documents of
a similar name; every one reads the releases the question's scope pinned (docs/design.md#agents)."""

from __future__ import annotations

import re

from knowledge.access import QuestionScope, readable_documents
from knowledge.agents.planner import PlanStep
from knowledge.models import Document
from knowledge.retrieval.scope import Scope
from knowledge.retrieval.service import (
    KnowledgeContext,
    RetrievalRequest,
    context_from_chunks,
    interleave,
    retrieve,
)
from knowledge.synthesis.refusal import MAX_CLOSEST


class ScopedSearch:
    """Searches for one question's loop, within ``asked`` and with the call's ``overrides``.

    ``closest`` keeps the nearest passages of the first search the answerability verdict refused, for
    a refusal's "closest matches".
    """

    def __init__(self, *, user, asked: QuestionScope, overrides, config: dict) -> None:
        self.user, self.asked, self.overrides, self.config = user, asked, overrides, config
        # Every search, reference and context of this answer reads the releases the edge's scope
        # check read, even if one is promoted or rolled back between two rounds.
        self.scope = Scope.of_chunk_sets(asked.chunk_sets)
        self.closest: list = []

    def search(self, query: str, document_ids=None) -> KnowledgeContext:
        return retrieve(
            user=self.user,
            request=RetrievalRequest(
                question=query,
                asked=self.asked,
                overrides=self.overrides,
                document_ids=document_ids,
            ),
        )

    def answering(self, query: str) -> list:
        """A whole-scope search's passages, or none when the verdict says they do not answer."""
        context = self.search(query)
        if not context.answerable and not self.closest:
            self.closest = context.primary_chunks[:MAX_CLOSEST]
        return _answering(context)

    def for_step(self, step: PlanStep) -> tuple[list, str]:
        """The step's search inside its documents; then documents of a similar name; then everything."""
        targets = step.target_document_ids
        if targets:
            chunks = self._in_each(step.query, targets)
            if chunks:
                return chunks, "documents"
            similar = self._similar_names(targets)
            if similar:
                chunks = _answering(self.search(step.query, similar))
                if chunks:
                    return chunks, "similar_names"
        return self.answering(step.query), "whole_scope" if targets else "none"

    def context_of(self, question: str, chunks: list, *, cover_documents: bool) -> KnowledgeContext:
        """The answer's context from the kept passages; with none, the closest matches to name."""
        context = context_from_chunks(
            question=question, config=self.config, scope=self.scope, ranked=[chunks]
        )
        context.cover_documents = cover_documents
        context.closest = [] if chunks else self.closest
        return context

    def _in_each(self, query: str, document_ids: list[int]) -> list:
        """One search per target document, interleaved by rank: each contributes its best passages.

        One search over all of them would let the document that matches the question's wording best
        fill every place, which is what multi-hop questions suffer from.
        """
        if len(document_ids) == 1:
            return _answering(self.search(query, document_ids))
        return interleave([_answering(self.search(query, [document_id])) for document_id in document_ids])

    def _similar_names(self, targets: list[int]) -> list[int]:
        """Readable documents whose core file name matches a target's (docs/design.md#agents)."""
        candidates = readable_documents(user=self.user, collection_ids=list(self.asked.search_ids))
        names = [
            _core_name(n) for n in Document.objects.filter(pk__in=targets).values_list("filename", flat=True)
        ]
        return [
            pk
            for pk, filename in candidates.exclude(pk__in=targets).values_list("pk", "filename")
            if any(name and (name in _core_name(filename) or _core_name(filename) in name) for name in names)
        ]


def _core_name(filename: str) -> str:
    """A file name without an id prefix such as "(215066178-180449588)-" and without its extension."""
    name = re.sub(r"^\(\d+-\d+\)-", "", filename.strip().lower())
    return name.rsplit(".", 1)[0] if "." in name else name


def _answering(context) -> list:
    """A restricted search's passages, or none when they do not answer the query.

    With no cosine cut before fusion, a search inside the wrong document still returns its closest
    passages; the answerability verdict is what says the document holds nothing for this step, so the
    loop widens the search.
    """
    return context.primary_chunks if context.answerable else []
