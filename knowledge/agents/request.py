"""What one agentic answer is asked for (knowledge.agents.loop takes it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from knowledge.access import QuestionScope
from knowledge.clients.llm import LLMConfig


@dataclass(frozen=True)
class AgenticRequest:
    """``user`` asks ``question`` (follow-ups already resolved) within ``asked``, the scope the edge
    resolved; ``overrides`` are the call's parameter values; ``llm`` is the language model for the
    loop's steps and its answer, None without one (every step then falls back to its rules)."""

    user: object
    question: str
    asked: QuestionScope
    overrides: Mapping | None = None
    llm: LLMConfig | None = None

    @property
    def step_llm(self) -> LLMConfig | None:
        return self.llm if self.llm is not None and self.llm.configured else None
