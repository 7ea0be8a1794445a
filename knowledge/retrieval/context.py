"""Context assembly within the maxTokens budget, formatted as in docs/design.md#answers.

Each chunk becomes a numbered source block (title, source file, source_ref,
content); primary chunks come first, referenced chunks after. A block that does
not fit the remaining budget is left out whole, never cut mid-text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from knowledge.text.token_counts import llm_token_count


@dataclass(frozen=True)
class ContextBlock:
    number: int
    text: str
    tokens: int


def format_block(number: int, *, title: str, filename: str, source_ref: str, content: str) -> str:
    return _block_head(number, title, filename, source_ref) + _block_body(content)


def _block_head(number: int, title: str, filename: str, source_ref: str) -> str:
    return f"=== Source {number} ===\nTitle: {title}\nSource: {filename} ({source_ref})\n---\n"


def _block_body(content: str) -> str:
    return f"{content.strip()}\n"


def block_tokens(number: int, *, title: str, filename: str, source_ref: str, content: str) -> int:
    """The block's LLM tokens: its head's plus its body's. Exact, as the tokenizer never joins text
    across the line break that ends the head (its pieces stop at line breaks); the body's count is
    kept per process, as the same passages come back for many questions (counting them was ~5% of
    a retrieve request under load, py-spy). An empty passage's line break joins the head's."""
    head = _block_head(number, title, filename, source_ref)
    if not content.strip():
        return llm_token_count(head + _block_body(content))
    return llm_token_count(head) + _body_tokens(content)


@lru_cache(maxsize=4096)
def _body_tokens(content: str) -> int:
    return llm_token_count(_block_body(content))


def assemble(items: list[dict], *, max_tokens: int) -> tuple[list[tuple[int, ContextBlock]], int]:
    """Blocks for as many items as fit, in order, each with the index of its item; and the total."""
    blocks: list[tuple[int, ContextBlock]] = []
    total = 0
    for index, item in enumerate(items):
        number = len(blocks) + 1
        text = format_block(number, **item)
        tokens = block_tokens(number, **item)
        if total + tokens > max_tokens:
            continue
        blocks.append((index, ContextBlock(number, text, tokens)))
        total += tokens
    return blocks, total
