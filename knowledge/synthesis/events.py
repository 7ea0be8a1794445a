"""The events of one answer (docs/design.md#answers), and their Server-Sent Events form.

In order, every turn emits:

    execution_start               {session_id, session_title, turn_index, question, profile_id,
                                   profile_type, profile_tag}
    knowledge_retrieval_start     {collection_count, question, resolved_question, resolution}
    knowledge_retrieval_complete  {results_count, documents[], sources[], duration_ms}
    conversation_llm_step         {step, mode, model, input_tokens, output_tokens, token_source,
                                   duration_ms, calls[], error}
    token_update                  {input_tokens, output_tokens, source, total_input, total_output}
    final_answer                  {html, text, mode, label, sources[], dropped_citations, passages[]}
    execution_complete            {duration_ms, tokens{input, output, source}, session_id, turn_id, mode}

and, between knowledge_retrieval_complete and conversation_llm_step:

    answer_delta   {text}            the answer as it is written (streamed only, not stored:
                                     final_answer carries the whole text)
    llm_error      {error, fallback} the LLM failed; the answer falls back to extraction

With agentic retrieval on (the profile's ``agentic.enabled``), every step of
the loop is an event, from after knowledge_retrieval_start:

    agent_step     {step, round, status, method, duration_ms, input_tokens, output_tokens,
                    llm_calls, note, detail}
                   step: classify, expand, route, plan, retrieve, grade, rewrite, rerank
                   (then knowledge_retrieval_complete), generate, check, retry (then
                   rewrite/retrieve/grade/rerank and knowledge_retrieval_complete again),
                   budget (the time or token budget ran out; it answers with what it has)

A failure that stops the turn is sent as ``error`` {message, status}.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from config.base.validation import ascii_digits

if TYPE_CHECKING:
    from knowledge.retrieval.service import KnowledgeContext

EXECUTION_START = "execution_start"
RETRIEVAL_START = "knowledge_retrieval_start"
RETRIEVAL_COMPLETE = "knowledge_retrieval_complete"
LLM_STEP = "conversation_llm_step"
TOKEN_UPDATE = "token_update"
FINAL_ANSWER = "final_answer"
EXECUTION_COMPLETE = "execution_complete"
ANSWER_DELTA = "answer_delta"
LLM_ERROR = "llm_error"
AGENT_STEP = "agent_step"
ERROR = "error"

ORDER = (
    EXECUTION_START,
    RETRIEVAL_START,
    RETRIEVAL_COMPLETE,
    LLM_STEP,
    TOKEN_UPDATE,
    FINAL_ANSWER,
    EXECUTION_COMPLETE,
)
NOT_STORED = frozenset({ANSWER_DELTA})


@dataclass(frozen=True)
class Event:
    name: str
    data: dict
    seq: int = 0  # position in the turn's stream, from 1
    t_ms: float = 0.0  # since the turn started

    def as_dict(self) -> dict:
        return {"event": self.name, "seq": self.seq, "t_ms": self.t_ms, "data": self.data}

    @classmethod
    def from_dict(cls, stored: dict) -> Event:
        return cls(stored["event"], stored.get("data", {}), stored.get("seq", 0), stored.get("t_ms", 0.0))


@dataclass(frozen=True)
class Emitted:
    """An event as the answer's steps (synthesis, the agentic loop) produce it: the chat numbers it,
    times it and stores it as an ``Event``."""

    name: str
    data: dict


@dataclass(frozen=True)
class ContextReady:
    """The context the answer will come from is ready: the chat announces it as
    knowledge_retrieval_complete (and lists its passages beside the answer)."""

    context: KnowledgeContext


def sse(event: Event) -> str:
    """One Server-Sent Event: ``id``, ``event`` and a one-line JSON ``data``, blank-line terminated."""
    payload = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"id: {event.seq}\nevent: {event.name}\ndata: {payload}\n\n"


def parse_sse(text: str) -> list[Event]:
    """The events of an SSE text (for clients and tests)."""
    events = []
    for block in text.split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value
        if "event" in fields:
            seq = int(fields["id"]) if ascii_digits(fields.get("id", "")) else 0
            events.append(Event(fields["event"], json.loads(fields.get("data") or "{}"), seq))
    return events
