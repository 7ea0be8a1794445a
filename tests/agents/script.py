"""A cooperative model for the loopback OpenAI-compatible server, step by step.

Each agent step has its own system prompt; the responder recognises it and
answers as a well-behaved model would (valid JSON naming real document ids),
unless a test scripted that step's next replies. Every step it answered is
recorded in order, so tests can assert the loop's path through the server.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque

from knowledge.agents.grading import GRADE_PROMPT
from knowledge.agents.grounding import CHECK_PROMPT
from knowledge.agents.planner import PLAN_PROMPT
from knowledge.agents.queries import CLASSIFY_PROMPT, EXPAND_PROMPT, REWRITE_PROMPT
from knowledge.agents.router import ROUTE_PROMPT
from knowledge.ingestion.summary import SUMMARY_SYSTEM_PROMPT
from knowledge.retrieval.rerank import _PROMPT as RERANK_PROMPT
from tests.synthesis.openai_server import Reply

PREFIXES = {
    "classify": CLASSIFY_PROMPT[:40],
    "expand": EXPAND_PROMPT[:40],
    "rewrite": REWRITE_PROMPT[:40],
    "route": ROUTE_PROMPT[:40],
    "plan": PLAN_PROMPT[:40],
    "grade": GRADE_PROMPT[:40],
    "check": CHECK_PROMPT[:40],
    "rerank": RERANK_PROMPT[:40],
    "summary": SUMMARY_SYSTEM_PROMPT[:40],
}
LISTED = re.compile(r"^\[(\d+)\] ([^:\n]+):", re.MULTILINE)
PASSAGE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)

ANSWER = (
    "National Flag of Canada Day is observed on February 15 [Source 1]. "
    "A gravity hill looks uphill because the horizon is hidden [Source 2]."
)


def step_of(request) -> str:
    system = request.system
    for step, prefix in PREFIXES.items():
        if system.startswith(prefix):
            return step
    return "synthesis"


def user_text(request) -> str:
    return next((m["content"] for m in request.messages if m["role"] == "user"), "")


def passage_count(request) -> int:
    """How many numbered passages a grading or reranking prompt holds."""
    return len(PASSAGE.findall(user_text(request).split("Passages:", 1)[1]))


def reply_json(data) -> Reply:
    return Reply(text=json.dumps(data))


class AgentModel:
    def __init__(self, *, plan_files=("flag_day.html", "gravity_hill.md")) -> None:
        self.plan_files = plan_files
        self.steps: list[str] = []
        self.scripted: dict[str, deque] = defaultdict(deque)
        self.rewrites = 0

    def script(self, step: str, *replies) -> None:
        """The next replies for ``step`` (Reply objects, dicts sent as JSON, or callables of the request)."""
        self.scripted[step].extend(replies)

    def __call__(self, request) -> Reply:
        step = step_of(request)
        self.steps.append(step)
        if self.scripted[step]:
            scripted = self.scripted[step].popleft()
            if callable(scripted):
                scripted = scripted(request)
            return scripted if isinstance(scripted, Reply) else reply_json(scripted)
        return getattr(self, f"_{step}")(request)

    # -- a cooperative model's replies ------------------------------------------------

    def _classify(self, request):
        return reply_json({"type": "multi_hop"})

    def _expand(self, request):
        return reply_json({"queries": ["Flag Day Canada date", "gravity hill optical illusion"]})

    def _rewrite(self, request):
        self.rewrites += 1
        return reply_json({"query": f"gravity hill slope illusion horizon {self.rewrites}"})

    def _route(self, request):
        listed = {name.strip(): int(i) for i, name in LISTED.findall(user_text(request))}
        return reply_json({"document_ids": [listed[name] for name in self.plan_files if name in listed]})

    def _plan(self, request):
        listed = {name.strip(): int(i) for i, name in LISTED.findall(user_text(request))}
        first, second = (listed[name] for name in self.plan_files)
        return reply_json(
            {
                "strategy": "One search per fact, then combine",
                "steps": [
                    {
                        "description": "When Flag Day is observed",
                        "target_documents": [first],
                        "query": "National Flag of Canada Day observed February 15",
                        "expected_output": "the date",
                    },
                    {
                        "description": "Why a gravity hill looks uphill",
                        "target_documents": [second],
                        "query": "gravity hill illusion downhill slope appears uphill",
                        "expected_output": "the cause",
                    },
                ],
                "requires_combination": True,
            }
        )

    def _grade(self, request):
        return reply_json({"scores": [0.9] * passage_count(request)})

    def _rerank(self, request):
        return reply_json({"scores": list(range(passage_count(request), 0, -1))})

    def _check(self, request):
        return reply_json(
            {"claims": [{"claim": "Flag Day is on February 15", "supported": True, "sources": [1]}]}
        )

    def _synthesis(self, request):
        return Reply(text=ANSWER)

    def _summary(self, request):
        return reply_json(
            {
                "document_type": "Encyclopedia article",
                "summary": "Explains an optical illusion on roads.",
                "key_topics": ["gravity hill", "optical illusion"],
                "use_for": "questions about gravity hills",
            }
        )


def unsupported(claim: str):
    return {"claims": [{"claim": claim, "supported": False, "sources": [2]}]}
