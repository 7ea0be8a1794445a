"""The agentic loop with the router and planner (docs/design.md#agents), as one answer's steps.

    classify -> [direct: no search]
    gather (knowledge.agents.gather: expand, route, plan, retrieve, grade, rewrite, rerank)
    -> knowledge_retrieval_complete -> generate -> check grounding
       -> unsupported claims: retry with a rewritten query (at most maxRetries),
          then keep only the supported sentences (or extract)

Every step emits an ``agent_step`` event and is charged to the answer's budget; when time or tokens
run out the loop stops and answers with what it has (by extraction when no LLM call fits). The
answers are written by the synthesis component the chat gives it (knowledge.synthesis.answer), so
events and answers are the ones the standard path produces.
"""

from __future__ import annotations

import time
from dataclasses import replace

from knowledge.agents.budget import Budget, BudgetExhausted
from knowledge.agents.gather import Gathering
from knowledge.agents.grounding import check, supported_only
from knowledge.agents.loop_options import AgenticSettings
from knowledge.agents.queries import DIRECT, STANDARD, StepResult, classify
from knowledge.agents.request import AgenticRequest
from knowledge.agents.search import ScopedSearch
from knowledge.agents.trace import StepLog
from knowledge.clients.llm import LLMConfig
from knowledge.models import ChatTurn
from knowledge.parameter_values import resolved_config
from knowledge.synthesis.answer import Answer, Synthesis
from knowledge.synthesis.citations import resolve_citations
from knowledge.synthesis.events import ContextReady
from knowledge.synthesis.extractive import LABEL_BUDGET, LABEL_UNSUPPORTED
from knowledge.synthesis.prompts import prompt_equivalent_tokens


class AgenticRun:
    """One question's loop; iterate ``run()`` for its events (``Emitted`` and ``ContextReady``); it
    returns the Answer, or None when the message needs no search (classified direct)."""

    def __init__(self, request: AgenticRequest, synthesis: Synthesis) -> None:
        self.request, self.synthesis = request, synthesis
        config = resolved_config(request.asked.profile, request.overrides)
        self.config = config
        self.settings = AgenticSettings.from_config(config)
        self.budget = Budget(self.settings.time_budget_seconds, self.settings.token_budget)
        self.log = StepLog(self.budget, request.step_llm)
        search = ScopedSearch(
            user=request.user, asked=request.asked, overrides=request.overrides, config=config
        )
        self.gathering = Gathering(request, self.settings, search, self.log)
        self.answer: Answer | None = None
        self._announced = None  # the context knowledge_retrieval_complete showed
        self._unsupported: list[str] = []

    @property
    def trace(self):
        return self.log.trace

    @property
    def context(self):
        return self.gathering.context

    # -- the loop -------------------------------------------------------------------

    def run(self):
        try:
            kind = yield from self._classify()
            if kind == DIRECT:
                return None
            yield from self.gathering.gather(self.request.question, kind, first=True)
            yield from self._announce()
            yield from self._generate_and_check()
        except BudgetExhausted as exc:
            yield from self._out_of_budget(str(exc))
        self.trace.tokens_used = self.budget.used_tokens
        return self.answer

    def _classify(self):
        started = time.perf_counter()
        result = classify(self.request.question, ask=self.log.ask())
        self.trace.kind = result.value
        yield self.log.step("classify", started, result, detail={"kind": result.value})
        return result.value

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
            yield from self.gathering.gather(query, STANDARD, first=False)
            yield from self._announce()
        yield from self._keep_supported()

    def _generate(self):
        started = time.perf_counter()
        llm, label = self.log.llm, ""
        if llm is not None:
            llm, label = self._within_budget(llm)
            if llm is None:
                note = self.trace.budget_exhausted
                yield self.log.step(
                    "budget", started, StepResult(None, "limit", note), {}, status="exhausted"
                )
        if label:
            self.answer = self.synthesis.extract(self.context, label)
        else:
            deltas = not self.settings.hallucination_check
            self.answer = yield from self.synthesis.answer(self.context, llm, deltas=deltas)
        self._unsupported = []
        if self.answer.mode == ChatTurn.Mode.LLM:
            self.budget.used_tokens += self.answer.input_tokens + self.answer.output_tokens
        result = StepResult(self.answer, self.answer.mode, note=label)
        yield self.log.step("generate", started, result, detail={"citations": len(self.answer.citations)})

    def _within_budget(self, llm: LLMConfig) -> tuple[LLMConfig | None, str]:
        """The LLM for the answer within the budget, or None (extract) with the extract's label."""
        needed = (
            prompt_equivalent_tokens(
                config=self.config, context_text=self.context.context_text, question=self.request.question
            )
            + llm.max_output_tokens
        )
        try:
            self.budget.check("generate", tokens_needed=needed)
        except BudgetExhausted as exc:
            self.trace.budget_exhausted = str(exc)
            return None, LABEL_BUDGET
        return replace(llm, timeout=max(1.0, min(llm.timeout, self.budget.remaining_seconds()))), ""

    def _check(self):
        started = time.perf_counter()
        result = check(
            self.answer.text,
            _numbered(self.answer, self.context),
            extracted=self.answer.mode == ChatTurn.Mode.EXTRACTIVE,
            strict=self.settings.strict_check,
            ask=self.log.ask(),
            cited=len(self.answer.citations),
        )
        if result.grounded is False:
            self.trace.flagged = True
            self._unsupported = result.unsupported
        yield self.log.step(
            "check", started, StepResult(result, result.method, result.note), result.as_detail()
        )
        return result.grounded

    def _retry(self):
        started = time.perf_counter()
        self.trace.retries += 1
        self.log.round += 1
        result = StepResult(None, "loop", note="the answer makes claims its sources do not support")
        yield self.log.step("retry", started, result, detail={"unsupported": self._unsupported})
        titles = [s.chunk.document.display_title for s in self.context.sources]
        return (yield from self.gathering.rewrite(titles, after_check=True))

    def _keep_supported(self):
        """The retries are spent and claims are still unsupported: drop them, or extract."""
        started = time.perf_counter()
        llm_answer = self.answer.mode == ChatTurn.Mode.LLM
        pruned = supported_only(self.answer.text, self._unsupported) if llm_answer else None
        if pruned is not None:
            text, removed = pruned
            plural = "s" if removed != 1 else ""
            text += f"\n\n(Left out: {removed} statement{plural} the sources do not support.)"
            cited = resolve_citations(text, _numbered(self.answer, self.context))
            self.answer = replace(
                self.answer, text=cited.text, citations=cited.citations, label="supported_only"
            )
            method = "supported_only"
        else:
            self.answer = self.synthesis.extract(self.context, LABEL_UNSUPPORTED)
            method = "extractive"
        self._unsupported = []
        yield self.log.step("generate", started, StepResult(self.answer, method), detail={"after": "check"})

    def _out_of_budget(self, reason: str):
        self.trace.budget_exhausted = reason
        yield self.log.step(
            "budget", time.perf_counter(), StepResult(None, "limit", reason), {}, status="exhausted"
        )
        gathering = self.gathering
        if gathering.context is None and gathering.kept:
            gathering.context = gathering.context_of(
                list(gathering.kept.values())
            )  # stopped before reranking
        if gathering.context is None:
            started = time.perf_counter()
            gathering.context = gathering.search.search(self.request.question)
            yield self.log.step(
                "retrieve", started, StepResult(None, "hybrid"), {"chunks": len(self.context.primary_chunks)}
            )
        if self._announced is not self.context:
            yield from self._announce()
        if self.answer is None or self._unsupported:
            self.answer = self.synthesis.extract(self.context, LABEL_BUDGET)
            self._unsupported = []

    def _announce(self):
        self._announced = self.context
        yield ContextReady(self.context)


def _numbered(answer: Answer | None, context) -> list:
    """What the answer's [Source N] number: an extracted answer's list adds the continuations it
    quotes to the context's sources (knowledge.synthesis.extractive)."""
    passages = answer.passages if answer is not None else None
    return context.sources if passages is None else passages
