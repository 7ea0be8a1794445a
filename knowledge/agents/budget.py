"""The time and token budget of one agentic answer, and the LLM calls charged to it.

Every LLM step asks the budget first: it gets at most the remaining time as
its timeout and is refused (BudgetExhausted) when its prompt plus its own
output limit would overrun the remaining tokens. The loop then answers with
what it has, so no question can run on without end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from knowledge.clients.llm import LLMConfig, LLMError, LLMResult, call_record, complete, messages_token_count

MIN_STEP_SECONDS = 1.0


class BudgetExhausted(Exception):
    """No time or tokens left for the next step; the message says which and where."""


@dataclass
class Budget:
    seconds: float
    tokens: int
    started: float = field(default_factory=time.monotonic)
    used_tokens: int = 0
    calls: list[dict] = field(default_factory=list)

    def remaining_seconds(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def remaining_tokens(self) -> int:
        return self.tokens - self.used_tokens

    def check(self, step: str, *, tokens_needed: int = 0) -> None:
        if self.remaining_seconds() <= 0:
            raise BudgetExhausted(f"the time budget of {self.seconds:g}s was spent before {step}")
        if tokens_needed > self.remaining_tokens():
            raise BudgetExhausted(
                f"the token budget was spent before {step}: {self.used_tokens} of {self.tokens} used, "
                f"{tokens_needed} needed"
            )

    def step_config(self, llm: LLMConfig, step: str, *, messages: list[dict], max_tokens: int) -> LLMConfig:
        """The LLM configuration for one step: refused when the budget cannot cover it."""
        self.check(step, tokens_needed=messages_token_count(messages) + max_tokens)
        timeout = max(MIN_STEP_SECONDS, min(llm.timeout, self.remaining_seconds()))
        return replace(llm, timeout=timeout, stream=False)

    def charge(self, step: str, result: LLMResult) -> None:
        self.used_tokens += result.input_tokens + result.output_tokens
        self.calls.append(call_record(step, result))


def ask(llm: LLMConfig, budget: Budget, step: str, messages: list[dict], *, max_tokens: int) -> LLMResult:
    """One LLM call for ``step`` within the budget; LLMError or BudgetExhausted otherwise."""
    config = budget.step_config(llm, step, messages=messages, max_tokens=max_tokens)
    try:
        result = complete(config, messages, max_tokens=max_tokens)
    except LLMError:
        budget.calls.append(
            {
                "purpose": step,
                "model": llm.model,
                "input_tokens": 0,
                "output_tokens": 0,
                "token_source": "usage",
                "duration_ms": 0.0,
                "failed": True,
            }
        )
        raise
    budget.charge(step, result)
    return result
