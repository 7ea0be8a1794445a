"""The question-level steps: classify it, expand it into variants, rewrite it when the search was weak.

Each has an LLM path whose reply is validated and a path without an LLM
(rules, or nothing), so a missing or misbehaving model changes how well the
loop works, never whether it works.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from knowledge.clients.llm import LLMError
from knowledge.text.json_reply import json_object, text_field, text_list
from knowledge.text.words import content_terms

DIRECT, STANDARD, MULTI_HOP = "direct", "standard", "multi_hop"
KINDS = (DIRECT, STANDARD, MULTI_HOP)
MAX_QUERY_CHARS = 300
MAX_VARIANTS = 3
# A message with more content words than this asks about something: it is never "direct".
DIRECT_MAX_TERMS = 3

_CONVERSATIONAL = re.compile(
    r"^\s*(hi|hello|hey|thanks|thank you|good (morning|afternoon|evening)|bye|goodbye|ok|okay|cheers)\b",
    re.IGNORECASE,
)
_MULTI_HOP_CUES = re.compile(
    r"\b(compare|comparison|compared|versus|vs\.?|differences?|differ|both|respectively|each of|"
    r"as well as|combined?|relationship between|which (?:is|are|was|were) (?:more|less|larger|smaller|"
    r"higher|lower|older|newer))\b",
    re.IGNORECASE,
)

CLASSIFY_PROMPT = (
    "Classify a message sent to a question-answering system over the user's documents. "
    '"direct": small talk that needs no documents (greetings, thanks). '
    '"standard": asks for one fact or one topic; one search finds it. '
    '"multi_hop": needs several facts combined: comparisons, several entities, a value looked up '
    "through another (a rate for a class defined elsewhere), or steps that depend on each other. "
    'Reply with JSON only: {"type": "direct" | "standard" | "multi_hop"}'
)
EXPAND_PROMPT = (
    "Write two or three search queries that ask for the same information as the question in "
    "different words (synonyms, the terms a document would use). Reply with JSON only: "
    '{"queries": ["...", "..."]}'
)
REWRITE_PROMPT = (
    "A search of the user's documents found too little that is relevant to the question. Write one "
    "better search query: other words, the specific terms a document would use, nothing the question "
    'does not ask. Reply with JSON only: {"query": "..."}'
)


@dataclass
class StepResult:
    """What a step decided, how (llm, rules, ...), and why it fell back, if it did."""

    value: object
    method: str
    note: str = ""
    detail: dict = field(default_factory=dict)


def classify_by_rules(question: str) -> str:
    if _CONVERSATIONAL.search(question) and len(content_terms(question)) <= DIRECT_MAX_TERMS:
        return DIRECT
    if _MULTI_HOP_CUES.search(question) or question.count("?") > 1:
        return MULTI_HOP
    return STANDARD


def classify(question: str, *, ask) -> StepResult:
    """direct / standard / multi_hop; ``ask`` is None without an LLM."""
    if ask is None:
        return StepResult(classify_by_rules(question), "rules")
    try:
        reply = ask("classify", _messages(CLASSIFY_PROMPT, f"Message: {question}"), max_tokens=20)
        kind = text_field(json_object(reply.text), "type", max_chars=20).lower().replace("-", "_")
        if kind not in KINDS:
            raise ValueError(f"unknown type {kind!r}")
    except (LLMError, ValueError) as exc:
        return StepResult(classify_by_rules(question), "rules", note=f"LLM classification unusable: {exc}")
    if kind == DIRECT and len(content_terms(question)) > DIRECT_MAX_TERMS:
        # Answering a real question without looking would answer it from the model, not the documents.
        return StepResult(STANDARD, "llm", note="classified direct, but it asks about something: searched")
    return StepResult(kind, "llm")


def expand(question: str, *, ask) -> StepResult:
    """Up to three rephrasings of the question (not including it); none without an LLM."""
    if ask is None:
        return StepResult([], "skipped", note="no LLM configured")
    try:
        reply = ask("expand", _messages(EXPAND_PROMPT, f"Question: {question}"), max_tokens=160)
        variants = text_list(
            json_object(reply.text), "queries", max_items=MAX_VARIANTS + 1, max_chars=MAX_QUERY_CHARS
        )
    except (LLMError, ValueError) as exc:
        return StepResult([], "llm", note=f"expansion unusable: {exc}")
    fresh = _new_queries(variants, seen=[question])[:MAX_VARIANTS]
    return StepResult(fresh, "llm", detail={"queries": fresh})


def rewrite(question: str, *, tried: list[str], found: list[str], ask) -> StepResult:
    """A different query for the same question, or None when there is no new one to try."""
    if ask is not None:
        titles = "; ".join(dict.fromkeys(found)) or "nothing"
        prompt = f"Question: {question}\nQueries tried: {' | '.join(tried)}\nFound (titles): {titles}"
        try:
            reply = ask("rewrite", _messages(REWRITE_PROMPT, prompt), max_tokens=80)
            query = text_field(json_object(reply.text), "query", max_chars=MAX_QUERY_CHARS)
            fresh = _new_queries([query], seen=tried)
            if fresh:
                return StepResult(fresh[0], "llm")
            note = "the LLM repeated a query already tried"
        except (LLMError, ValueError) as exc:
            note = f"LLM rewrite unusable: {exc}"
    else:
        note = "no LLM configured"
    keywords = " ".join(sorted(content_terms(question)))
    fresh = _new_queries([keywords], seen=tried) if keywords else []
    return StepResult(fresh[0] if fresh else None, "rules", note=note)


def _new_queries(queries: list[str], *, seen: list[str]) -> list[str]:
    known = {" ".join(q.lower().split()) for q in seen}
    fresh = []
    for query in queries:
        key = " ".join(query.lower().split())
        if key and key not in known:
            known.add(key)
            fresh.append(query)
    return fresh


def _messages(system: str, user: str) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
