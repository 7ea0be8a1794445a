"""The agentic loop's first half: find the passages an answer will come from (docs/design.md#agents).

    expand -> (multi-hop, decomposition on) route -> plan
    -> retrieve (each plan step inside its documents, with fallback) -> grade
       -> too few pass: rewrite, retrieve again (at most maxRetries)
    -> rerank

Every step is an ``agent_step`` event (knowledge.agents.trace); the passages that passed grading are
kept over every round, and ``context`` is the reranked context the answer is written from.
"""

from __future__ import annotations

import time

from knowledge.agents.grading import grade
from knowledge.agents.loop_options import AgenticSettings
from knowledge.agents.planner import Plan, plan
from knowledge.agents.queries import MULTI_HOP, StepResult, expand, rewrite
from knowledge.agents.request import AgenticRequest
from knowledge.agents.router import route
from knowledge.agents.search import ScopedSearch
from knowledge.agents.trace import StepLog
from knowledge.clients.embedding import embed_query
from knowledge.models import DocumentSummary
from knowledge.retrieval.rerank import rerank, reranker_of
from knowledge.retrieval.service import KnowledgeContext, interleave


class Gathering:
    """The passages of one question's loop, gathered round by round (``gather``), then reranked."""

    def __init__(
        self, request: AgenticRequest, settings: AgenticSettings, search: ScopedSearch, log: StepLog
    ) -> None:
        self.request, self.settings, self.search, self.log = request, settings, search, log
        self.context: KnowledgeContext | None = None
        self.kept: dict[int, object] = {}  # chunks that passed grading, over every round
        self._tried = [request.question]

    def gather(self, query: str, kind: str, *, first: bool):
        """Retrieve, grade and rewrite until enough passes or the retries are spent; then rerank."""
        variants, step_plan = [], None
        if first and self.settings.expansion:
            variants = yield from self._expand(query)
        if first and kind == MULTI_HOP and self.settings.decomposition:
            step_plan = yield from self._route_and_plan(query)
        for attempt in range(self.settings.max_retries + 1):
            self.log.round += 1
            self.log.trace.retrieval_rounds += 1
            found = yield from self._retrieve(query, variants, step_plan)
            enough = yield from self._grade(found)
            if enough or attempt == self.settings.max_retries:
                break
            query = yield from self.rewrite([c.chunk.document.display_title for c in found])
            if query is None:
                break
            variants, step_plan = [], None
        yield from self._rerank()

    def rewrite(self, titles: list[str], *, after_check: bool = False):
        """A new query; counted as a rewrite (the rewrite rate) only when grading asked for it."""
        started = time.perf_counter()
        result = rewrite(self.request.question, tried=self._tried, found=titles, ask=self.log.ask())
        yield self.log.step(
            "rewrite", started, result, detail={"query": result.value, "after_check": after_check}
        )
        if result.value is not None:
            self.log.trace.rewrites += 0 if after_check else 1
            self._tried.append(result.value)
        return result.value

    def context_of(self, chunks: list) -> KnowledgeContext:
        return self.search.context_of(
            self.request.question, chunks, cover_documents=self.log.trace.kind == MULTI_HOP
        )

    def _expand(self, query: str):
        started = time.perf_counter()
        result = expand(query, ask=self.log.ask())
        self.log.trace.expanded = self.log.trace.expanded or bool(result.value)
        yield self.log.step("expand", started, result, detail={"queries": result.value})
        return result.value

    def _route_and_plan(self, query: str):
        started = time.perf_counter()
        routed = route(
            question=query,
            vector=embed_query(query),
            user=self.request.user,
            collection_ids=list(self.request.asked.search_ids),
            top_k=self.settings.router_top_k,
            ask=self.log.ask(),
        )
        self.log.trace.routed = len(routed.document_ids)
        yield self.log.step(
            "route", started, StepResult(routed, routed.method, routed.note), routed.as_detail()
        )
        started = time.perf_counter()
        summaries = DocumentSummary.objects.filter(document_id__in=routed.document_ids).select_related(
            "document"
        )
        by_id = {s.document_id: (s.document_id, s.document.filename, s.summary) for s in summaries}
        documents = [by_id[i] for i in routed.document_ids if i in by_id]
        made = plan(
            question=query, documents=documents, max_steps=self.settings.max_plan_steps, ask=self.log.ask()
        )
        self.log.trace.plan_steps = len(made.steps)
        yield self.log.step("plan", started, StepResult(made, made.method, made.note), made.as_detail())
        return made

    def _retrieve(self, query: str, variants: list[str], step_plan: Plan | None):
        started = time.perf_counter()
        ranked, searches = [], []
        for step in step_plan.steps if step_plan else []:
            chunks, fallback = self.search.for_step(step)
            ranked.append(chunks)
            searches.append({"query": step.query, "step": step.number, "restriction": fallback})
        queries = ([] if step_plan else [query]) + list(variants)
        for text in queries:
            ranked.append(self.search.answering(text))
            searches.append({"query": text, "restriction": "none"})
        found = interleave(ranked)
        detail = {"searches": searches, "chunks": len(found)}
        yield self.log.step("retrieve", started, StepResult(found, "hybrid"), detail)
        return found

    def _grade(self, found: list):
        started = time.perf_counter()
        asker = self.log.ask() if self.settings.grading else None
        grades = grade(self.request.question, found, threshold=self.settings.confidence_threshold, ask=asker)
        passed = grades.passed(found)
        for item in passed:
            self.kept.setdefault(item.chunk.pk, item)
        if grades.scores is not None:
            self.log.trace.graded += len(found)
            self.log.trace.passed += len(passed)
        note = grades.note or ("" if self.settings.grading else "grading is off")
        yield self.log.step(
            "grade", started, StepResult(grades, grades.method, note), grades.as_detail(found)
        )
        return grades.scores is None or len(self.kept) >= self.settings.min_relevant

    def _rerank(self):
        started = time.perf_counter()
        kept = list(self.kept.values())
        asked, question = self.request.asked, self.request.question
        rerank_ids = set(asked.rerank_ids)
        reranker = reranker_of(asked.profile) if rerank_ids else None
        if reranker is not None:
            kept, status = rerank(question, kept, collection_ids=rerank_ids, reranker=reranker)
            method = reranker.name
        elif rerank_ids and self.log.ask() is not None:
            kept, status = rerank(question, kept, collection_ids=rerank_ids, ask=self.log.ask())
            method = "llm"
        else:
            kept.sort(key=lambda item: -item.scores.get("grade", 0.0))
            status, method = "ordered by grade", "grades"
        self.context = self.context_of(kept)
        yield self.log.step(
            "rerank", started, StepResult(kept, method), detail={"status": status, "chunks": len(kept)}
        )
