"""Context assembly within the maxTokens budget, formatted as in docs/design.md#answers.

Each chunk becomes a numbered source block (title, source file, source_ref,
content); primary chunks come first, referenced chunks after. A block that does
not fit the remaining budget is left out whole, never cut mid-text.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.clients.tokens import llm_token_count


@dataclass(frozen=True)
class ContextBlock:
    number: int
    text: str
    tokens: int


def format_block(number: int, *, title: str, filename: str, source_ref: str, content: str) -> str:
    return (
        f"=== Source {number} ===\n"
        f"Title: {title}\n"
        f"Source: {filename} ({source_ref})\n"
        f"---\n"
        f"{content.strip()}\n"
    )


def assemble(items: list[dict], *, max_tokens: int) -> tuple[list[tuple[int, ContextBlock]], int]:
    """Blocks for as many items as fit, in order, each with the index of its item; and the total."""
    blocks: list[tuple[int, ContextBlock]] = []
    total = 0
    for index, item in enumerate(items):
        number = len(blocks) + 1
        text = format_block(number, **item)
        tokens = llm_token_count(text)
        if total + tokens > max_tokens:
            continue
        blocks.append((index, ContextBlock(number, text, tokens)))
        total += tokens
    return blocks, total
