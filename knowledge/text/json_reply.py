"""Reading the JSON object an LLM was asked to reply with.

Models wrap JSON in code fences or a sentence of prose; the first object that
parses is the reply. Anything else is a ValueError the caller turns into its
fallback, never a crash.
"""

from __future__ import annotations

import json
import re

_decoder = json.JSONDecoder()


def json_object(text: str) -> dict:
    """The first JSON object in ``text``; ValueError when there is none."""
    text = text or ""
    for match in re.finditer(r"\{", text):
        try:
            value, _end = _decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("the reply holds no JSON object")


def text_field(data: dict, key: str, *, max_chars: int, required: bool = True) -> str:
    """A string field, whitespace collapsed and cut to ``max_chars``; ValueError when missing or not text."""
    value = data.get(key)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "; ".join(value)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be text")
    value = " ".join(value.split())
    if required and not value:
        raise ValueError(f"{key!r} is empty")
    return value[:max_chars]


def text_list(data: dict, key: str, *, max_items: int, max_chars: int) -> list[str]:
    """A list of non-empty strings, at most ``max_items``; ValueError when it is not one."""
    value = data.get(key)
    if isinstance(value, str):
        value = [part for part in re.split(r"[;,]", value)]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key!r} must be a list of text")
    cleaned = [" ".join(v.split())[:max_chars] for v in value]
    cleaned = [v for v in cleaned if v]
    if not cleaned:
        raise ValueError(f"{key!r} is empty")
    return list(dict.fromkeys(cleaned))[:max_items]
