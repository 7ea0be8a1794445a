"""Text and ids from users, checked before they reach PostgreSQL: one helper instead of a patch per field.

PostgreSQL's text and jsonb types cannot hold the NUL character (``\\x00``)
nor a lone surrogate (``"\\ud800"``, legal in a JSON string, not Unicode that
UTF-8 can encode): an insert or even a search with one fails with DataError, a
server error. So both are refused as bad input everywhere
(``unstorable_location`` is what the request guard, the API and the MCP server
use), and services clean each text they store with ``text_clean`` (those
characters, length of the column, required or not).

Ids in text are read by ``id_or_none`` / ``id_parse`` only: ``str.isdigit()``
is also true for ``"²"`` (which ``int()`` cannot read) and ``"٣"`` (which it
reads as 3).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from config.base.errors import KnowledgeError

NUL = "\x00"
MAX_ID = 2**63 - 1  # bigint: larger "ids" are bad input, not missing rows
_SURROGATE = re.compile("[\ud800-\udfff]")
_ASCII_DIGITS = re.compile(r"[0-9]+")


def ascii_digits(text) -> bool:
    """Whether ``text`` is a string of the digits 0-9 only."""
    return isinstance(text, str) and _ASCII_DIGITS.fullmatch(text) is not None


def id_or_none(raw) -> int | None:
    """``raw`` as a row id (ASCII digits or an int, 1 to the bigint maximum), or None."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif ascii_digits(raw):
        value = int(raw)
    else:
        return None
    return value if 0 < value <= MAX_ID else None


def id_parse(raw, *, field: str) -> int:
    """``raw`` as a row id; anything else is bad input (KnowledgeError, a 400) naming ``field``."""
    value = id_or_none(raw)
    if value is None:
        raise KnowledgeError(f"{field} must be an id (a positive whole number)")
    return value


def text_problem(value: str) -> str | None:
    """What makes ``value`` unstorable in PostgreSQL, in words, or None."""
    if NUL in value:
        return "contains a NUL character"
    if not value.isascii() and _SURROGATE.search(value):
        return "contains a lone surrogate (text that is not valid Unicode)"
    return None


def text_clean(value, *, field: str, max_length: int | None = None, required: bool = False) -> str:
    """``value`` stripped; KnowledgeError naming ``field`` if not text, with NUL, missing or too long."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise KnowledgeError(f"{field} must be text")
    value = value.strip()
    problem = text_problem(value)
    if problem:
        raise KnowledgeError(f"{field} {problem}")
    if required and not value:
        raise KnowledgeError(f"{field} is required")
    if max_length is not None and len(value) > max_length:
        raise KnowledgeError(f"{field} is {len(value)} characters; the limit is {max_length}")
    return value


def unstorable_location(data, *, name: str = "input") -> tuple[str, str] | None:
    """Where in ``data`` (text, lists, dicts, query dicts; keys too) a text PostgreSQL cannot store is,
    e.g. ``body.tags[2]``, and what is wrong with it.

    Walks with an explicit stack, so hostile nesting cannot exhaust Python's recursion limit.
    """
    for location, value in _leaves(data, name):
        problem = text_problem(value) if isinstance(value, str) else None
        if problem:
            return location, problem
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
