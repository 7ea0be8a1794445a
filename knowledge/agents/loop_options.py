"""The agentic parameters of one answer, read from the three-tier configuration
(knowledge.parameter_values)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class AgenticSettings:
    enabled: bool
    max_retries: int
    grading: bool
    expansion: bool
    decomposition: bool
    hallucination_check: bool
    strict_check: bool
    confidence_threshold: float
    min_relevant: int
    router_top_k: int
    max_plan_steps: int
    time_budget_seconds: float
    token_budget: int

    @classmethod
    def from_config(cls, config: dict) -> AgenticSettings:
        return cls(
            enabled=config["agentic.enabled"],
            max_retries=config["agentic.maxRetries"],
            grading=config["agentic.grading"],
            expansion=config["agentic.expansion"],
            decomposition=config["agentic.decomposition"],
            hallucination_check=config["agentic.hallucinationCheck"],
            strict_check=config["agentic.strictCheck"],
            confidence_threshold=config["agentic.confidenceThreshold"],
            min_relevant=config["agentic.minRelevant"],
            router_top_k=config["agentic.routerTopK"],
            max_plan_steps=config["agentic.maxPlanSteps"],
            time_budget_seconds=config["agentic.timeBudgetSeconds"],
            token_budget=config["agentic.tokenBudget"],
        )

    def as_dict(self) -> dict:
        return asdict(self)
