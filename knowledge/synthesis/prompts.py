"""Prompts for synthesis and for rewriting follow-up questions, within the token budget.

The synthesis call is laid out as in docs/design.md#answers: system prompt, knowledge
context, conversation history, question. The system prompt and the context go
in one system message (several local chat templates refuse a second one), the
history as alternating user/assistant messages, the question last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.clients.llm import messages_token_count
from knowledge.text.token_counts import llm_token_count

DEFAULT_SYSTEM_PROMPT = """\
You are a knowledge assistant. Answer the user's question using ONLY the documents \
provided below in the knowledge context; never use outside or general knowledge.

Rules:
- Every claim must come from the documents and carry a citation in the form [Source N], \
where N is the number of the source block it comes from. Cite several as [Source 1][Source 3].
- Use only the source numbers that appear in the context. Never invent a source.
- If the documents do not contain the answer, say plainly that the knowledge base does not \
contain this information. Do not guess, and do not fill gaps from memory.
- If the documents answer only part of the question, answer that part and say what is missing.
- The earlier conversation helps you understand the question (for example "the first one" \
or "it"), but facts must still come from the documents below.
- Be concise and precise."""

CONTEXT_HEADER = "Knowledge context (the only material you may use):"

REWRITE_SYSTEM_PROMPT = """\
You turn a follow-up question into a standalone question for a document search. \
Use the conversation only to resolve references such as "it", "that", "they", \
"the first one" or "the second document". Keep the user's intent and wording otherwise. \
Do not answer the question. Reply with the standalone question only, on one line."""

# History is the part of the prompt that grows; it gets at most this share of maxTokens.
HISTORY_SHARE = 0.5
HISTORY_MAX_TOKENS = 1500
HISTORY_MAX_TURNS = 6
CITATION_MARKER = re.compile(r"\s*\[\s*sources?\b[^\]]*\]", re.IGNORECASE)


@dataclass(frozen=True)
class Exchange:
    """One earlier turn, as the model sees it."""

    question: str
    answer: str


def system_prompt(config: dict) -> str:
    """synthesisPromptOverride, when set, replaces the default entirely."""
    override = (config.get("synthesisPromptOverride") or "").strip()
    return override or DEFAULT_SYSTEM_PROMPT


def history_budget(max_tokens: int) -> int:
    return min(HISTORY_MAX_TOKENS, int(max_tokens * HISTORY_SHARE))


def bounded_history(exchanges: list[Exchange], *, budget: int) -> list[Exchange]:
    """The most recent exchanges whose text fits ``budget`` tokens, oldest first.

    Earlier answers lose their [Source N] markers: those numbers belonged to
    another context and would be read as pointing into this one.
    """
    kept, used = [], 0
    for exchange in reversed(exchanges[-HISTORY_MAX_TURNS:]):
        cleaned = Exchange(exchange.question, strip_citations(exchange.answer))
        cost = llm_token_count(cleaned.question) + llm_token_count(cleaned.answer) + 8
        if used + cost > budget:
            break
        kept.append(cleaned)
        used += cost
    return list(reversed(kept))


def strip_citations(text: str) -> str:
    return CITATION_MARKER.sub("", text or "").strip()


def synthesis_messages(*, config: dict, context_text: str, history: list[Exchange], question: str) -> list:
    system = f"{system_prompt(config)}\n\n{CONTEXT_HEADER}\n\n{context_text.strip()}"
    messages = [{"role": "system", "content": system}]
    for exchange in bounded_history(history, budget=history_budget(config["maxTokens"])):
        messages.append({"role": "user", "content": exchange.question})
        messages.append({"role": "assistant", "content": exchange.answer})
    messages.append({"role": "user", "content": question})
    return messages


def rewrite_messages(*, history: list[Exchange], cited_titles: list[str], question: str) -> list:
    lines = []
    for exchange in bounded_history(history, budget=HISTORY_MAX_TOKENS):
        lines += [f"User: {exchange.question}", f"Assistant: {exchange.answer}"]
    if cited_titles:
        lines.append("Sources of the last answer, in order:")
        lines += [f"{n}. {title}" for n, title in enumerate(cited_titles, start=1)]
    conversation = "\n".join(lines)
    user = f"Conversation:\n{conversation}\n\nFollow-up question: {question}\n\nStandalone question:"
    return [{"role": "system", "content": REWRITE_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def prompt_equivalent_tokens(*, config: dict, context_text: str, question: str) -> int:
    """What an LLM call would have been sent, for the estimate on paths that make none."""
    messages = synthesis_messages(config=config, context_text=context_text, history=[], question=question)
    return messages_token_count(messages)
