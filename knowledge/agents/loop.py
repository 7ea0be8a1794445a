"""The agentic loop with the router and planner (docs/design.md#agents), as one answer's steps.

    classify -> [direct: no search]
    expand -> (multi-hop, decomposition on) route -> plan
    -> retrieve (each plan step inside its documents, with fallback) -> grade
       -> too few pass: rewrite, retrieve again (at most maxRetries)
    -> rerank -> knowledge_retrieval_complete -> generate -> check grounding
       -> unsupported claims: retry with a rewritten query (at most maxRetries),
          then keep only the supported sentences (or extract)

Every step emits an ``agent_step`` event and is charged to the answer's
budget; when time or tokens run out the loop stops and answers with what it
has (by extraction when no LLM call fits). The chat service supplies the
event factory and the answer generator, so events and answers are the ones
the standard path produces.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, replace
from functools import partial

from knowledge.access import QuestionScope, readable_documents
from knowledge.agents.budget import Budget, BudgetExhausted, ask
from knowledge.agents.grading import grade
from knowledge.agents.grounding import check, supported_only
from knowledge.agents.loop_options import AgenticSettings
from knowledge.agents.planner import Plan, PlanStep, plan
from knowledge.agents.queries import DIRECT, MULTI_HOP, STANDARD, StepResult, classify, expand, rewrite
from knowledge.agents.router import route
from knowledge.clients.embedding import embed_query
from knowledge.models import ChatTurn, Document, DocumentSummary
from knowledge.parameter_values import resolved_config
from knowledge.retrieval.rerank import rerank, reranker_of
from knowledge.retrieval.scope import search_scope
from knowledge.retrieval.service import (
    KnowledgeContext,
    RetrievalRequest,
    context_from_chunks,
    interleave,
    retrieve,
)
from knowledge.synthesis import events as ev
from knowledge.synthesis.citations import resolve_citations
from knowledge.synthesis.extractive import LABEL_BUDGET, LABEL_UNSUPPORTED
from knowledge.synthesis.prompts import prompt_equivalent_tokens
from knowledge.synthesis.refusal import MAX_CLOSEST


@dataclass
class Trace:
    """What the loop did, for the turn's record and the evaluation metrics."""

    kind: str = ""
    retrieval_rounds: int = 0
    rewrites: int = 0
    retries: int = 0
    expanded: bool = False
    flagged: bool = False
    graded: int = 0
    passed: int = 0
    routed: int = 0
    plan_steps: int = 0
    budget_exhausted: str = ""
    tokens_used: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class AgenticRun:
    """One question's loop; iterate ``run()`` for its events, which returns (context, answer).

    ``emit(name, data)`` makes an event; ``on_context(context)`` makes the
    knowledge_retrieval_complete event; ``generate(context, llm, deltas=, label=)``
    is a generator of events returning the chat Answer. (None, None) means the
    message needs no search (classified direct).
    """

    def __init__(self, *, user, question, asked: QuestionScope, overrides, llm, emit, on_context, generate):
        self.user, self.question, self.asked = user, question, asked
        self.overrides = overrides
        self.config = resolved_config(asked.profile, overrides)
        self.settings = AgenticSettings.from_config(self.config)
        self.scope_ids, self.rerank_ids = list(asked.search_ids), set(asked.rerank_ids)
        # Read once: every search, reference and context of this answer reads the same release of
        # each collection, even if one is promoted or rolled back between two rounds.
        self.scope = search_scope(user=user, collection_ids=self.scope_ids).pinned()
        self.llm = llm if llm is not None and llm.configured else None
        self.budget = Budget(self.settings.time_budget_seconds, self.settings.token_budget)
        self.emit, self.on_context, self.generate = emit, on_context, generate
        self.trace = Trace()
        self.context: KnowledgeContext | None = None
        self.answer = None
        self._kept: dict[int, object] = {}  # chunks that passed grading, over every round
        self._tried = [question]
        self._round = 0
        self._calls_reported = 0
        self._announced: KnowledgeContext | None = None  # the context knowledge_retrieval_complete showed
        self._unsupported: list[str] = []
        self._closest: list = []  # the nearest passages of a search the verdict refused

    # -- the loop -------------------------------------------------------------------

    def run(self):
        try:
            kind = yield from self._classify()
            if kind == DIRECT:
                return None, None
            yield from self._gather(self.question, kind, first=True)
            yield from self._announce()
            yield from self._generate_and_check()
        except BudgetExhausted as exc:
            yield from self._out_of_budget(str(exc))
        self.trace.tokens_used = self.budget.used_tokens
        return self.context, self.answer

    def _classify(self):
        started = time.perf_counter()
        result = classify(self.question, ask=self._ask())
        self.trace.kind = result.value
        yield self._step("classify", started, result, detail={"kind": result.value})
        return result.value

    def _gather(self, query: str, kind: str, *, first: bool):
        """Retrieve, grade and rewrite until enough passes or the retries are spent."""
        variants, step_plan = [], None
        if first and self.settings.expansion:
            variants = yield from self._expand(query)
        if first and kind == MULTI_HOP and self.settings.decomposition:
            step_plan = yield from self._route_and_plan(query)
        for attempt in range(self.settings.max_retries + 1):
            self._round += 1
            self.trace.retrieval_rounds += 1
            found = yield from self._retrieve(query, variants, step_plan)
            enough = yield from self._grade(found)
            if enough or attempt == self.settings.max_retries:
                break
            query = yield from self._rewrite([c.chunk.document.display_title for c in found])
            if query is None:
                break
            variants, step_plan = [], None
        yield from self._rerank()

    def _expand(self, query: str):
        started = time.perf_counter()
        result = expand(query, ask=self._ask())
        self.trace.expanded = self.trace.expanded or bool(result.value)
        yield self._step("expand", started, result, detail={"queries": result.value})
        return result.value

    def _route_and_plan(self, query: str):
        started = time.perf_counter()
        routed = route(
            question=query,
            vector=embed_query(query),
            user=self.user,
            collection_ids=self.scope_ids,
            top_k=self.settings.router_top_k,
            ask=self._ask(),
        )
        self.trace.routed = len(routed.document_ids)
        yield self._step("route", started, StepResult(routed, routed.method, routed.note), routed.as_detail())
        started = time.perf_counter()
        summaries = DocumentSummary.objects.filter(document_id__in=routed.document_ids).select_related(
            "document"
        )
        by_id = {s.document_id: (s.document_id, s.document.filename, s.summary) for s in summaries}
        documents = [by_id[i] for i in routed.document_ids if i in by_id]
        made = plan(
            question=query, documents=documents, max_steps=self.settings.max_plan_steps, ask=self._ask()
        )
        self.trace.plan_steps = len(made.steps)
        yield self._step("plan", started, StepResult(made, made.method, made.note), made.as_detail())
        return made

    def _retrieve(self, query: str, variants: list[str], step_plan: Plan | None):
        started = time.perf_counter()
        ranked, searches = [], []
        for step in step_plan.steps if step_plan else []:
            chunks, fallback = self._step_chunks(step)
            ranked.append(chunks)
            searches.append({"query": step.query, "step": step.number, "restriction": fallback})
        queries = ([] if step_plan else [query]) + list(variants)
        for text in queries:
            ranked.append(self._answering_search(text))
            searches.append({"query": text, "restriction": "none"})
        found = interleave(ranked)
        detail = {"searches": searches, "chunks": len(found)}
        yield self._step("retrieve", started, StepResult(found, "hybrid"), detail)
        return found

    def _step_chunks(self, step: PlanStep) -> tuple[list, str]:
        """The step's search inside its documents; then documents of a similar name; then everything."""
        targets = step.target_document_ids
        if targets:
            chunks = self._search_each(step.query, targets)
            if chunks:
                return chunks, "documents"
            similar = self._similar_names(targets)
            if similar:
                chunks = _answering(self._search(step.query, similar))
                if chunks:
                    return chunks, "similar_names"
        return self._answering_search(step.query), "whole_scope" if targets else "none"

    def _search_each(self, query: str, document_ids: list[int]) -> list:
        """One search per target document, interleaved by rank: each contributes its best passages.

        One search over all of them would let the document that matches the
        question's wording best fill every place, which is what multi-hop
        questions suffer from.
        """
        if len(document_ids) == 1:
            return _answering(self._search(query, document_ids))
        return interleave([_answering(self._search(query, [document_id])) for document_id in document_ids])

    def _similar_names(self, targets: list[int]) -> list[int]:
        """Readable documents whose core file name matches a target's (docs/design.md#agents)."""
        candidates = readable_documents(user=self.user, collection_ids=self.scope_ids)
        names = [
            _core_name(n) for n in Document.objects.filter(pk__in=targets).values_list("filename", flat=True)
        ]
        return [
            pk
            for pk, filename in candidates.exclude(pk__in=targets).values_list("pk", "filename")
            if any(name and (name in _core_name(filename) or _core_name(filename) in name) for name in names)
        ]

    def _grade(self, found: list):
        started = time.perf_counter()
        asker = self._ask() if self.settings.grading else None
        grades = grade(self.question, found, threshold=self.settings.confidence_threshold, ask=asker)
        passed = grades.passed(found)
        for item in passed:
            self._kept.setdefault(item.chunk.pk, item)
        if grades.scores is not None:
            self.trace.graded += len(found)
            self.trace.passed += len(passed)
        note = grades.note or ("" if self.settings.grading else "grading is off")
        yield self._step("grade", started, StepResult(grades, grades.method, note), grades.as_detail(found))
        return grades.scores is None or len(self._kept) >= self.settings.min_relevant

    def _rewrite(self, titles: list[str], *, after_check: bool = False):
        """A new query; counted as a rewrite (the rewrite rate) only when grading asked for it."""
        started = time.perf_counter()
        result = rewrite(self.question, tried=self._tried, found=titles, ask=self._ask())
        yield self._step(
            "rewrite", started, result, detail={"query": result.value, "after_check": after_check}
        )
        if result.value is not None:
            self.trace.rewrites += 0 if after_check else 1
            self._tried.append(result.value)
        return result.value

    def _rerank(self):
        started = time.perf_counter()
        kept = list(self._kept.values())
        reranker = reranker_of(self.asked.profile) if self.rerank_ids else None
        if reranker is not None:
            kept, status = rerank(self.question, kept, collection_ids=self.rerank_ids, reranker=reranker)
            method = reranker.name
        elif self.rerank_ids and self._ask() is not None:
            kept, status = rerank(self.question, kept, collection_ids=self.rerank_ids, ask=self._ask())
            method = "llm"
        else:
            kept.sort(key=lambda item: -item.scores.get("grade", 0.0))
            status, method = "ordered by grade", "grades"
        self.context = self._context_of(kept)
        yield self._step(
            "rerank", started, StepResult(kept, method), detail={"status": status, "chunks": len(kept)}
        )

    def _generate_and_check(self):
        for attempt in range(self.settings.max_retries + 1):
            yield from self._generate()
            if not self.settings.hallucination_check or self.answer.mode == ChatTurn.Mode.NO_RESULTS:
                return
            grounded = yield from self._check()
            if grounded is not False:
                return
            if attempt == self.settings.max_retries:
                break
            query = yield from self._retry()
            if query is None:
                break
            yield from self._gather(query, STANDARD, first=False)
            yield from self._announce()
        yield from self._keep_supported()

    def _generate(self):
        started = time.perf_counter()
        llm, label = self.llm, None
        if llm is not None:
            llm, label = self._generation_llm(llm)
            if llm is None:
                note = self.trace.budget_exhausted
                yield self._step("budget", started, StepResult(None, "limit", note), {}, status="exhausted")
        deltas = not self.settings.hallucination_check
        self.answer = yield from self.generate(self.context, llm, deltas=deltas, label=label)
        self._unsupported = []
        if self.answer.mode == ChatTurn.Mode.LLM:
            self.budget.used_tokens += self.answer.input_tokens + self.answer.output_tokens
        result = StepResult(self.answer, self.answer.mode, note=label or "")
        yield self._step("generate", started, result, detail={"citations": len(self.answer.citations)})

    def _generation_llm(self, llm):
        """The LLM for the answer within the budget, or None (extract) with the reason."""
        needed = (
            prompt_equivalent_tokens(
                config=self.config, context_text=self.context.context_text, question=self.question
            )
            + llm.max_output_tokens
        )
        try:
            self.budget.check("generate", tokens_needed=needed)
        except BudgetExhausted as exc:
            self.trace.budget_exhausted = str(exc)
            return None, LABEL_BUDGET
        return replace(llm, timeout=max(1.0, min(llm.timeout, self.budget.remaining_seconds()))), None

    def _check(self):
        started = time.perf_counter()
        extracted = self.answer.mode == ChatTurn.Mode.EXTRACTIVE
        result = check(
            self.answer.text,
            self._passages(),
            extracted=extracted,
            strict=self.settings.strict_check,
            ask=self._ask(),
            cited=len(self.answer.citations),
        )
        if result.grounded is False:
            self.trace.flagged = True
            self._unsupported = result.unsupported
        yield self._step("check", started, StepResult(result, result.method, result.note), result.as_detail())
        return result.grounded

    def _retry(self):
        started = time.perf_counter()
        self.trace.retries += 1
        self._round += 1
        result = StepResult(None, "loop", note="the answer makes claims its sources do not support")
        yield self._step("retry", started, result, detail={"unsupported": self._unsupported})
        titles = [s.chunk.document.display_title for s in self.context.sources]
        return (yield from self._rewrite(titles, after_check=True))

    def _keep_supported(self):
        """The retries are spent and claims are still unsupported: drop them, or extract."""
        started = time.perf_counter()
        llm_answer = self.answer.mode == ChatTurn.Mode.LLM
        pruned = supported_only(self.answer.text, self._unsupported) if llm_answer else None
        if pruned is not None:
            text, removed = pruned
            plural = "s" if removed != 1 else ""
            text += f"\n\n(Left out: {removed} statement{plural} the sources do not support.)"
            cited = resolve_citations(text, self._passages())
            self.answer = replace(
                self.answer,
                text=cited.text,
                citations=cited.citations,
                label="supported_only",
            )
            method = "supported_only"
        else:
            self.answer = yield from self.generate(self.context, None, deltas=False, label=LABEL_UNSUPPORTED)
            method = "extractive"
        self._unsupported = []
        yield self._step("generate", started, StepResult(self.answer, method), detail={"after": "check"})

    def _out_of_budget(self, reason: str):
        self.trace.budget_exhausted = reason
        yield self._step(
            "budget", time.perf_counter(), StepResult(None, "limit", reason), {}, status="exhausted"
        )
        if self.context is None and self._kept:
            self.context = self._context_of(list(self._kept.values()))  # stopped before reranking
        if self.context is None:
            started = time.perf_counter()
            self.context = self._search(self.question)
            yield self._step(
                "retrieve", started, StepResult(None, "hybrid"), {"chunks": len(self.context.primary_chunks)}
            )
        if self._announced is not self.context:
            yield from self._announce()
        if self.answer is None or self._unsupported:
            self.answer = yield from self.generate(self.context, None, deltas=False, label=LABEL_BUDGET)
            self._unsupported = []

    # -- helpers ------------------------------------------------------------------

    def _announce(self):
        self._announced = self.context
        yield self.on_context(self.context)

    def _passages(self) -> list:
        """What the answer's [Source N] number: an extracted answer's list adds the continuations it
        quotes to the context's sources (knowledge.synthesis.extractive)."""
        passages = self.answer.passages if self.answer is not None else None
        return self.context.sources if passages is None else passages

    def _ask(self):
        """The budgeted LLM call for steps, or None without an LLM."""
        return None if self.llm is None else partial(ask, self.llm, self.budget)

    def _search(self, query: str, document_ids=None) -> KnowledgeContext:
        return retrieve(
            user=self.user,
            request=RetrievalRequest(
                question=query,
                asked=self.asked,
                overrides=self.overrides,
                document_ids=document_ids,
                scope=self.scope,
            ),
        )

    def _answering_search(self, query: str) -> list:
        """A whole-scope search's passages, or none when the verdict says they do not answer (its
        nearest passages are kept for the refusal's "closest matches")."""
        context = self._search(query)
        if not context.answerable and not self._closest:
            self._closest = context.primary_chunks[:MAX_CLOSEST]
        return _answering(context)

    def _context_of(self, chunks: list) -> KnowledgeContext:
        context = context_from_chunks(
            question=self.question, config=self.config, scope=self.scope, ranked=[chunks]
        )
        context.cover_documents = self.trace.kind == MULTI_HOP
        context.closest = [] if chunks else self._closest
        return context

    def _step(self, name: str, started: float, result: StepResult, detail: dict, *, status: str = "done"):
        calls = self.budget.calls[self._calls_reported :]
        self._calls_reported = len(self.budget.calls)
        data = {
            "step": name,
            "round": self._round,
            "status": status,
            "method": result.method,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            "input_tokens": sum(c["input_tokens"] for c in calls),
            "output_tokens": sum(c["output_tokens"] for c in calls),
            "llm_calls": len(calls),
            "note": result.note,
            "detail": detail,
        }
        return self.emit(ev.AGENT_STEP, data)


def _core_name(filename: str) -> str:
    """A file name without an id prefix such as "(215066178-180449588)-" and without its extension."""
    name = re.sub(r"^\(\d+-\d+\)-", "", filename.strip().lower())
    return name.rsplit(".", 1)[0] if "." in name else name


def _answering(context) -> list:
    """A restricted search's passages, or none when they do not answer the query.

    With no cosine cut before fusion, a search inside the wrong document still
    returns its closest passages; the answerability verdict is what says the
    document holds nothing for this step, so the loop widens the search.
    """
    return context.primary_chunks if context.answerable else []
