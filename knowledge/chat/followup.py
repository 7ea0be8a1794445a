"""Resolve a follow-up ("tell me more about the first one") into a question retrieval can use.

With an LLM configured, the model rewrites the question from the history;
otherwise, or when that call fails, a deterministic rewrite appends what the
follow-up points at: the source an ordinal names ("the first one" is the
first source the previous answer cited), or the previous question and the
titles of its sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from knowledge.clients.llm import LLMConfig, LLMError, LLMResult, complete
from knowledge.synthesis.citations import MARKER, marker_numbers
from knowledge.synthesis.prompts import Exchange, rewrite_messages
from knowledge.text.sentences import split_sentences

RESOLUTION_NONE = "none"
RESOLUTION_RULES = "rules"
RESOLUTION_LLM = "llm"

_ORDINALS = {
    "first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2,
    "fourth": 3, "4th": 3, "fifth": 4, "5th": 4, "last": -1, "former": 0, "latter": -1,
}  # fmt: skip
_ORDINAL_REF = re.compile(r"\bthe\s+(" + "|".join(_ORDINALS) + r")\b", re.IGNORECASE)
_ANAPHORA = re.compile(
    r"\b(it|its|they|them|their|those|these|that one|this one|he|she|him|her|"
    r"more about|tell me more|what else|elaborate|explain further|the same)\b",
    re.IGNORECASE,
)
SHORT_QUESTION_WORDS = 4
MAX_REWRITE_CHARS = 600
SNIPPET_WORDS = 30


@dataclass
class PreviousTurn:
    question: str
    answer: str
    cited: list[dict] = field(default_factory=list)  # Citation dicts, as stored on the turn

    def cited_in_order(self) -> list[dict]:
        """The cited sources in the order the answer first mentions them."""
        by_n = {c["n"]: c for c in self.cited}
        order: list[int] = []
        for match in MARKER.finditer(self.answer):
            order += [n for n in marker_numbers(match.group(2)) if n in by_n and n not in order]
        order += [n for n in sorted(by_n) if n not in order]
        return [by_n[n] for n in order]


@dataclass
class Resolution:
    question: str
    method: str = RESOLUTION_NONE
    llm: LLMResult | None = None
    error: str = ""


def looks_like_follow_up(question: str) -> bool:
    if len(question.split()) <= SHORT_QUESTION_WORDS:
        return True
    return bool(_ORDINAL_REF.search(question) or _ANAPHORA.search(question))


def resolve_question(
    question: str, *, previous: PreviousTurn | None, history: list[Exchange], llm: LLMConfig | None
) -> Resolution:
    # A refused turn cited nothing: there is nothing to follow up on, and its question (which the
    # documents do not cover) would only pull the new one towards a refusal.
    if previous is None or not previous.cited or not looks_like_follow_up(question):
        return Resolution(question)
    error = ""
    if llm is not None and llm.configured:
        try:
            return _rewrite_with_llm(question, previous, history, llm)
        except LLMError as exc:
            error = f"question rewrite failed, rules used instead: {exc}"
    return Resolution(rewrite_with_rules(question, previous), RESOLUTION_RULES, error=error)


def _rewrite_with_llm(question, previous, history, llm) -> Resolution:
    titles = [_describe(c) for c in previous.cited_in_order()]
    messages = rewrite_messages(history=history, cited_titles=titles, question=question)
    result = complete(llm, messages, max_tokens=120)
    rewritten = _first_line(result.text)
    if not rewritten or len(rewritten) > MAX_REWRITE_CHARS:
        raise LLMError("the question rewrite was empty or too long")
    return Resolution(rewritten, RESOLUTION_LLM, llm=result)


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = re.sub(r"^(standalone question|question)\s*:\s*", "", line.strip(), flags=re.IGNORECASE)
        line = line.strip().strip("\"'“”").strip()
        if line:
            return line
    return ""


def rewrite_with_rules(question: str, previous: PreviousTurn) -> str:
    cited = previous.cited_in_order()
    target = _ordinal_target(question, cited)
    if target is not None:
        focus = f"{_describe(target)}: {_snippet(target.get('text', ''))}"
    else:
        titles = "; ".join(dict.fromkeys(_describe(c) for c in cited[:3]))
        focus = f"{previous.question} {titles}".strip()
    return f"{question} ({focus})"[:MAX_REWRITE_CHARS]


def _ordinal_target(question: str, cited: list[dict]) -> dict | None:
    match = _ORDINAL_REF.search(question)
    if not match or not cited:
        return None
    index = _ORDINALS[match.group(1).lower()]
    return cited[index] if -len(cited) <= index < len(cited) else None


def _describe(citation: dict) -> str:
    kind, _, value = (citation.get("source_ref") or "").partition("=")
    title = citation.get("title") or citation.get("document") or ""
    return f"{title} - {value}" if value and value != title else title


def _snippet(text: str) -> str:
    """The source's first whole sentence (its opening words when it has none)."""
    sentences = split_sentences(text)
    return sentences[0] if sentences else " ".join(text.split()[:SNIPPET_WORDS])
