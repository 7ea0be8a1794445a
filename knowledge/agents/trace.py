"""What the agentic loop did: its ``agent_step`` events, and the counts the turn keeps and the
evaluation reads (docs/design.md#agents)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from functools import partial

from knowledge.agents.budget import Budget, ask
from knowledge.agents.queries import StepResult
from knowledge.clients.llm import LLMConfig
from knowledge.synthesis import events as ev
from knowledge.synthesis.events import Emitted


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


class StepLog:
    """The loop's steps as events, each with the LLM calls charged to the budget since the last one;
    ``round`` counts the searches and retries, ``ask`` is the budgeted LLM call (None without an LLM)."""

    def __init__(self, budget: Budget, llm: LLMConfig | None) -> None:
        self.budget, self.llm = budget, llm
        self.trace = Trace()
        self.round = 0
        self._calls_reported = 0

    def ask(self):
        return None if self.llm is None else partial(ask, self.llm, self.budget)

    def step(
        self, name: str, started: float, result: StepResult, detail: dict, *, status: str = "done"
    ) -> Emitted:
        calls = self.budget.calls[self._calls_reported :]
        self._calls_reported = len(self.budget.calls)
        data = {
            "step": name,
            "round": self.round,
            "status": status,
            "method": result.method,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            "input_tokens": sum(c["input_tokens"] for c in calls),
            "output_tokens": sum(c["output_tokens"] for c in calls),
            "llm_calls": len(calls),
            "note": result.note,
            "detail": detail,
        }
        return Emitted(ev.AGENT_STEP, data)
