"""Text helpers for rendering specs: whitespace, one-line previews of any value, enum lists,
reference names, and the size caps that keep sections readable on huge specs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

# Size caps that keep sections reasonably sized on huge specs.
MAX_ENUM_VALUES = 20
MAX_COMBINATION_MEMBERS = 12
PROPERTY_EXAMPLE_CHARS = 120
SCHEMA_EXAMPLE_CHARS = 400
EXAMPLE_VALUE_CHARS = 1500
NON_TEXT_PREVIEW_CHARS = 1500  # a description or title that is not text
MAX_LABEL_DEPTH = 3
MAX_INLINE_FIELDS = 15
COMPONENT_PROPERTY_DEPTH = 2  # nested inline objects shown below a component's properties
OPERATION_PROPERTY_DEPTH = 1  # ... and below a request body's top-level properties


_INLINE_WS = re.compile(r"[ \t\f\v\u00a0]+")
_ANY_WS = re.compile(r"\s+")


def _as_text(value: Any) -> str:
    """Text fields that hold a list or mapping (a malformed spec, or YAML aliases) get a bounded preview:
    ``str()`` of an aliased structure can be billions of characters."""
    if isinstance(value, (dict, list, tuple)):
        return value_preview(value, NON_TEXT_PREVIEW_CHARS)
    return str(value)


def normalize_block(text: Any) -> str:
    """Keep a description as written, collapsing whitespace runs inside lines."""
    if text is None:
        return ""
    lines = _as_text(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    for line in lines:
        stripped = line.rstrip()
        body = stripped.lstrip()
        indent = stripped[: len(stripped) - len(body)].replace("\t", "    ")
        body = _INLINE_WS.sub(" ", body)
        if not body:
            if out and out[-1] != "":
                out.append("")
            continue
        out.append(indent + body)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


def one_line(text: Any) -> str:
    if text is None:
        return ""
    return _ANY_WS.sub(" ", _as_text(text)).strip()


def value_preview(value: Any, limit: int) -> str:
    """A compact JSON-ish rendering of a literal value, at most ``limit`` chars.

    Bounded in both time and depth (YAML aliases can make a value recursive).
    """
    parts: list[str] = []
    size = 0
    truncated = False

    def emit(s: str) -> bool:
        nonlocal size, truncated
        if size >= limit:
            truncated = True
            return False
        parts.append(s)
        size += len(s)
        return True

    def walk(v: Any, depth: int) -> bool:
        if depth > 12:
            return emit("…")
        if isinstance(v, dict):
            if not emit("{"):
                return False
            for i, (k, item) in enumerate(v.items()):
                if i and not emit(", "):
                    return False
                if not emit(json.dumps(str(k), ensure_ascii=False) + ": "):
                    return False
                if not walk(item, depth + 1):
                    return False
            return emit("}")
        if isinstance(v, (list, tuple)):
            if not emit("["):
                return False
            for i, item in enumerate(v):
                if i and not emit(", "):
                    return False
                if not walk(item, depth + 1):
                    return False
            return emit("]")
        if isinstance(v, str):
            s = v if len(v) <= limit else v[:limit]
            return emit(json.dumps(s, ensure_ascii=False))
        if v is None or isinstance(v, (bool, int, float)):
            return emit(json.dumps(v))
        return emit(json.dumps(str(v), ensure_ascii=False))

    walk(value, 0)
    text = _ANY_WS.sub(" ", "".join(parts))
    if truncated or len(text) > limit:
        text = text[:limit].rstrip() + " …"
    return text


def scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    return value_preview(value, 60)


def enum_text(values: Any) -> str:
    if not isinstance(values, list):
        return ""
    shown = [one_line(scalar(v)) for v in values[:MAX_ENUM_VALUES]]
    text = " | ".join(shown)
    if len(values) > MAX_ENUM_VALUES:
        text += f" | … ({len(values) - MAX_ENUM_VALUES} more)"
    return text


def ref_display_name(ref: str) -> str:
    """The last segment of a $ref, decoded: '#/components/schemas/Pet' -> 'Pet'."""
    doc, _, fragment = ref.partition("#")
    if fragment:
        segment = unquote(fragment).rstrip("/").rsplit("/", 1)[-1]
        return segment.replace("~1", "/").replace("~0", "~") or ref
    return doc.rstrip("/").rsplit("/", 1)[-1] or ref


def str_keys(mapping: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(mapping, dict):
        for key, value in mapping.items():
            yield str(key), value
