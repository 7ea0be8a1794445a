"""Source references as people read them: ``page=3`` -> "p. 3", ``operation=POST /pets`` -> "POST /pets".

The stored ``source_ref`` stays strict (docs/design.md#references, for evaluation and the API);
this is only how pages show it.
"""

from __future__ import annotations

_COMPONENT_KINDS = {
    "schemas": "schema",
    "parameters": "parameter",
    "responses": "response",
    "requestBodies": "request body",
    "securitySchemes": "security scheme",
    "headers": "header",
    "examples": "example",
}


def source_label(source_ref: str | None) -> str:
    """A short human label for a strict source reference; unknown kinds are shown as they are."""
    kind, separator, value = (source_ref or "").partition("=")
    value = " ".join(value.split())
    if not separator or not value:
        return source_ref or ""
    if kind == "page":
        return f"p. {value}"
    if kind in ("slide", "sheet"):
        return f"{kind} {value}"
    if kind in ("heading", "section", "operation"):
        return value
    if kind == "component":
        group, _, name = value.partition("/")
        return f"{_COMPONENT_KINDS.get(group, group)} {name}".strip() if name else value
    return source_ref
