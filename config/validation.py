"""Text from users, checked before it reaches PostgreSQL: one helper instead of a patch per field.

PostgreSQL's text and jsonb types cannot hold the NUL character (``\\x00``):
an insert or even a search with one fails with DataError, a server error. So
NUL is refused as bad input everywhere (``nul_location`` is what the request
guard and the API use), and services clean each text they store with
``text_clean`` (NUL, length of the column, required or not).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from config.errors import KnowledgeError

NUL = "\x00"
MAX_ID = 2**63 - 1  # bigint: larger "ids" are bad input, not missing rows


def text_clean(value, *, field: str, max_length: int | None = None, required: bool = False) -> str:
    """``value`` stripped; KnowledgeError naming ``field`` if not text, with NUL, missing or too long."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise KnowledgeError(f"{field} must be text")
    value = value.strip()
    if NUL in value:
        raise KnowledgeError(f"{field} contains a NUL character")
    if required and not value:
        raise KnowledgeError(f"{field} is required")
    if max_length is not None and len(value) > max_length:
        raise KnowledgeError(f"{field} is {len(value)} characters; the limit is {max_length}")
    return value


def nul_location(data, *, name: str = "input") -> str | None:
    """Where in ``data`` (text, lists, dicts, query dicts; keys too) a NUL is, e.g. ``body.tags[2]``.

    Walks with an explicit stack, so hostile nesting cannot exhaust Python's recursion limit.
    """
    for location, value in _leaves(data, name):
        if isinstance(value, str) and NUL in value:
            return location
    return None


def _leaves(data, name: str) -> Iterator[tuple[str, object]]:
    stack = [(name, data)]
    while stack:
        location, value = stack.pop()
        if isinstance(value, Mapping) or hasattr(value, "lists"):
            items = value.lists() if hasattr(value, "lists") else value.items()
            for key, child in items:
                yield f"{location}[{key!r}]", key
                stack.append((f"{location}.{key}", child))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{location}[{index}]", child) for index, child in enumerate(value))
        else:
            yield location, getattr(value, "name", value)  # uploaded files: their names, not their bytes


def nests_deeper_than(value, max_depth: int) -> bool:
    """Whether lists and mappings in ``value`` nest deeper than ``max_depth`` levels.

    Walks with an explicit stack, so hostile nesting cannot exhaust Python's recursion limit.
    """
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
