"""The planner (docs/design.md#agents): one or more focused retrieval steps for the question.

A plan step names what it looks for, the documents to search (ids the router
chose), a focused query and the expected output; ``requires_combination``
says whether the answer needs the steps together. The LLM's plan is
validated (step count, queries, document ids); anything unusable, and every
question without an LLM, gets the single-step plan: the question itself over
the routed documents.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from config.base.validation import ascii_digits
from knowledge.agents.queries import MAX_QUERY_CHARS
from knowledge.clients.llm import LLMError
from knowledge.text.json_reply import json_object, text_field

PLAN_PROMPT = (
    "Plan the searches that answer the question from the listed documents. Use one step for a "
    "simple question; for a question that combines facts (comparisons, a value found through "
    "another), one step per fact, at most {max_steps}. Each step: what it finds, the ids of the "
    "documents to search (from the list), a short focused search query, and the expected output. "
    'Reply with JSON only: {{"strategy": "...", "steps": [{{"description": "...", '
    '"target_documents": [id], "query": "...", "expected_output": "..."}}], '
    '"requires_combination": true | false}}'
)


@dataclass
class PlanStep:
    number: int
    description: str
    target_document_ids: list[int]
    query: str
    expected_output: str = ""


@dataclass
class Plan:
    question: str
    strategy: str
    steps: list[PlanStep]
    requires_combination: bool
    method: str  # llm | single_step
    note: str = ""
    dropped_ids: list = field(default_factory=list)

    def as_detail(self) -> dict:
        return {
            "strategy": self.strategy,
            "steps": [asdict(step) for step in self.steps],
            "requires_combination": self.requires_combination,
            "dropped_ids": self.dropped_ids,
        }


def single_step_plan(question: str, document_ids: list[int], note: str = "") -> Plan:
    step = PlanStep(1, "Find the passages that answer the question", list(document_ids), question)
    return Plan(question, "Single retrieval step", [step], False, "single_step", note=note)


def plan(*, question: str, documents: list[tuple[int, str, str]], max_steps: int, ask) -> Plan:
    """``documents``: (id, filename, summary) of the routed documents."""
    routed = [document_id for document_id, _, _ in documents]
    if ask is None:
        return single_step_plan(question, routed, note="no LLM configured")
    try:
        return _llm_plan(question, documents, routed, max_steps, ask)
    except (LLMError, ValueError) as exc:
        return single_step_plan(question, routed, note=f"LLM plan unusable: {exc}")


def _llm_plan(question, documents, routed, max_steps, ask) -> Plan:
    listing = (
        "\n".join(f"[{i}] {name}: {summary[:300]}" for i, name, summary in documents) or "(all documents)"
    )
    messages = [
        {"role": "system", "content": PLAN_PROMPT.format(max_steps=max_steps)},
        {"role": "user", "content": f"Question: {question}\n\nDocuments:\n{listing}"},
    ]
    data = json_object(ask("plan", messages, max_tokens=120 + 160 * max_steps).text)
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise ValueError("'steps' must be a non-empty list")
    dropped: list = []
    steps = [_step(n, raw, routed, dropped) for n, raw in enumerate(raw_steps[:max_steps], start=1)]
    combine = data.get("requires_combination")
    note = f"{len(raw_steps) - max_steps} steps over the limit left out" if len(raw_steps) > max_steps else ""
    return Plan(
        question=question,
        strategy=text_field(data, "strategy", max_chars=500, required=False) or "Multi-step retrieval",
        steps=steps,
        requires_combination=combine if isinstance(combine, bool) else len(steps) > 1,
        method="llm",
        note=note,
        dropped_ids=dropped,
    )


def _step(number: int, raw, routed: list[int], dropped: list) -> PlanStep:
    if not isinstance(raw, dict):
        raise ValueError(f"step {number} is not an object")
    query = text_field(raw, "query", max_chars=MAX_QUERY_CHARS)
    targets = raw.get("target_documents") or []
    if not isinstance(targets, list):
        raise ValueError(f"step {number}: 'target_documents' must be a list")
    valid = []
    for item in targets:
        document_id = item if isinstance(item, int) and not isinstance(item, bool) else _digits(item)
        (valid if document_id in routed else dropped).append(document_id if document_id in routed else item)
    return PlanStep(
        number=number,
        description=text_field(raw, "description", max_chars=500, required=False) or query,
        target_document_ids=list(dict.fromkeys(valid)) or list(routed),
        query=query,
        expected_output=text_field(raw, "expected_output", max_chars=500, required=False),
    )


def _digits(item) -> int | None:
    text = str(item).strip().lstrip("#")
    return int(text) if ascii_digits(text) else None
