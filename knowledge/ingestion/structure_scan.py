"""JSON and YAML checked at upload without building their tree.

Loading a file to see whether it is an OpenAPI document builds every value it
holds: a 4 MB YAML flow list of one-letter scalars made the web process grow by
1.8 GB, a 16 MB JSON list of ``{}`` by 787 MB. These scanners read the file as
a stream of tokens (JSON) or parser events (YAML, libyaml's C parser) and keep
only a stack of the open collections, so memory stays bounded by the nesting
limit whatever the file holds. They enforce the same limits the extractor's
loaders do (``knowledge.ingestion.limits``): nodes, nesting and YAML alias
expansion, and return the top level's scalar values for the keys asked for
(``openapi``, ``swagger``).

Pure: no Django.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

import yaml
import yaml.cyaml
from yaml.composer import ComposerError
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from knowledge.ingestion.limits import (
    IngestLimits,
    NodeBudget,
    alias_expansion_check,
    json_text_check,
    too_deep,
    yaml_errors_translated,
)

# --------------------------------------------------------------------------
# JSON: a token scanner with the grammar of json.loads (NaN and Infinity included)
# --------------------------------------------------------------------------

_JSON_TOKEN = re.compile(
    r"[ \t\r\n]*(?:"
    r'(?P<string>")'
    r"|(?P<scalar>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity)"
    r"|(?P<punct>[\[\]{}:,]))"
)
_JSON_SPACE = re.compile(r"[ \t\r\n]*")


class _JsonScan:
    """A pushdown automaton over JSON tokens; raises json.JSONDecodeError where json.loads would."""

    def __init__(self, text: str, limits: IngestLimits, keys: Collection[str]) -> None:
        self.text = text
        self.limits = limits
        self.keys = keys
        self.nodes = NodeBudget(limits, "the JSON")
        self.stack: list[str] = []  # "[" or "{" for every open collection
        self.found: dict[str, Any] = {}
        self.root_is_object = False
        self.key: str | None = None  # the pending key of the top-level object

    def run(self) -> dict[str, Any] | None:
        pos = self._value(0)
        while self.stack:
            pos = self._after_value(pos)
        end = _JSON_SPACE.match(self.text, pos).end()
        if end != len(self.text):
            raise json.JSONDecodeError("Extra data", self.text, end)
        return self.found if self.root_is_object else None

    def _token(self, pos: int) -> re.Match:
        match = _JSON_TOKEN.match(self.text, pos)
        if match is None:
            raise json.JSONDecodeError("Expecting value", self.text, _JSON_SPACE.match(self.text, pos).end())
        return match

    def _value(self, pos: int) -> int:
        """One value at ``pos``: a scalar is consumed whole, a collection is opened."""
        match = self._token(pos)
        self.nodes.charge()
        if match["string"]:
            value, end = json.decoder.scanstring(self.text, match.end())
            self._top_level_value(json_text_check(value), quoted=True)
            return end
        if match["scalar"]:
            self._top_level_value(match["scalar"], quoted=False)
            return match.end()
        if match["punct"] not in "[{":
            raise json.JSONDecodeError("Expecting value", self.text, match.start("punct"))
        return self._open(match["punct"], match.end())

    def _open(self, bracket: str, pos: int) -> int:
        self.root_is_object = self.root_is_object or (not self.stack and bracket == "{")
        self.key = None
        self.stack.append(bracket)
        if len(self.stack) > self.limits.max_nesting_depth:
            raise too_deep("the JSON", self.limits.max_nesting_depth)
        match = _JSON_TOKEN.match(self.text, pos)
        closing = "]" if bracket == "[" else "}"
        if match and match["punct"] == closing:  # empty
            self.stack.pop()
            return match.end()
        return self._member(pos)

    def _member(self, pos: int) -> int:
        """An array element, or an object's key, colon and value."""
        if self.stack[-1] == "[":
            return self._value(pos)
        match = _JSON_TOKEN.match(self.text, pos)
        if not (match and match["string"]):
            where = _JSON_SPACE.match(self.text, pos).end()
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", self.text, where)
        self.nodes.charge()
        key, end = json.decoder.scanstring(self.text, match.end())
        json_text_check(key)
        colon = self._token(end)
        if colon["punct"] != ":":
            raise json.JSONDecodeError("Expecting ':' delimiter", self.text, colon.start())
        if len(self.stack) == 1:
            self.key = key
        return self._value(colon.end())

    def _after_value(self, pos: int) -> int:
        """A comma and the next member, or the end of the innermost open collection."""
        match = _JSON_TOKEN.match(self.text, pos)
        closing = "]" if self.stack[-1] == "[" else "}"
        punct = match["punct"] if match else None
        if punct == ",":
            return self._member(match.end())
        if punct == closing:
            self.stack.pop()
            return match.end()
        where = match.start() if match else _JSON_SPACE.match(self.text, pos).end()
        raise json.JSONDecodeError(f"Expecting ',' delimiter or '{closing}'", self.text, where)

    def _top_level_value(self, raw: str, *, quoted: bool) -> None:
        if self.key is not None and len(self.stack) == 1 and self.key in self.keys:
            self.found[self.key] = raw if quoted else json.loads(raw)
        self.key = None


def json_scan_bounded(text: str, limits: IngestLimits, keys: Collection[str] = ()) -> dict[str, Any] | None:
    """Validate JSON within the node and nesting limits without building it (json.JSONDecodeError if invalid).

    Returns the top-level object's scalar values for ``keys``, or None when the top level is not an object.
    """
    return _JsonScan(text, limits, keys).run()


# --------------------------------------------------------------------------
# YAML: libyaml's parser events, with the composer's limits
# --------------------------------------------------------------------------


class _YamlScan:
    """Counts nodes, depth and alias expansion from parser events, as the bounded composer does."""

    def __init__(self, limits: IngestLimits, keys: Collection[str]) -> None:
        self.limits = limits
        self.keys = keys
        self.nodes = NodeBudget(limits, "the YAML")
        # Per open collection: [expanded size so far, its anchor, children so far].
        self.stack: list[list] = []
        self.anchors: dict[str, int] = {}
        self.alias_expansion = 0
        self.root_is_mapping = False
        self.found: dict[str, Any] = {}
        self.key: str | None = None  # the pending scalar key of the top-level mapping

    def run(self, parser: yaml.cyaml.CParser) -> dict[str, Any] | None:
        documents = 0
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise ComposerError(
                        "expected a single document in the stream", None, "but found another document",
                        event.start_mark,
                    )  # fmt: skip
            elif isinstance(event, yaml.CollectionEndEvent):
                self._close()
            elif isinstance(event, yaml.NodeEvent):
                self._node(event)
        return self.found if self.root_is_mapping else None

    def _node(self, event: yaml.NodeEvent) -> None:
        self.nodes.charge()
        if len(self.stack) >= self.limits.max_nesting_depth:
            raise too_deep("the YAML", self.limits.max_nesting_depth)
        if isinstance(event, yaml.CollectionStartEvent):
            self.root_is_mapping = self.root_is_mapping or (
                not self.stack and isinstance(event, yaml.MappingStartEvent)
            )
            self._child(event, 0)
            self.stack.append([1, event.anchor, 0])
        elif isinstance(event, yaml.AliasEvent):
            size = self.anchors.get(event.anchor, 1)  # a recursive alias (still open) counts as one
            self.alias_expansion += size
            alias_expansion_check(self.alias_expansion, self.limits)
            self._child(event, size)
        else:
            size = max(len(event.value), 1)
            if event.anchor:
                self.anchors[event.anchor] = size
            self._child(event, size)

    def _close(self) -> None:
        size, anchor, _ = self.stack.pop()
        if anchor:
            self.anchors[anchor] = size
        if self.stack:
            self.stack[-1][0] += size

    def _child(self, event: yaml.NodeEvent, size: int) -> None:
        """Adds a child's size to its collection; in the top-level mapping, keys alternate with values."""
        if not self.stack:
            return
        parent = self.stack[-1]
        parent[0] += size
        parent[2] += 1
        if len(self.stack) > 1 or not self.root_is_mapping:
            return
        scalar = event.value if isinstance(event, yaml.ScalarEvent) else None
        if parent[2] % 2 == 1:
            self.key = scalar
        elif scalar is not None and self.key in self.keys:
            self.found[self.key] = _yaml_scalar(event)


def _yaml_scalar(event: yaml.ScalarEvent) -> Any:
    """The value the safe loader would give this scalar (``openapi: 3.0`` is a float there)."""
    tag = event.tag or Resolver().resolve(ScalarNode, event.value, event.implicit)
    node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    return SafeConstructor().construct_object(node)


def yaml_scan_bounded(text: str, limits: IngestLimits, keys: Collection[str] = ()) -> dict[str, Any] | None:
    """Validate one YAML document within the node, nesting and alias limits without building it.

    Returns the top-level mapping's scalar values for ``keys``, or None when the top level is not a
    mapping. yaml.YAMLError if the text is not YAML (or holds more than one document).
    """
    parser = yaml.cyaml.CParser(text)
    try:
        with yaml_errors_translated(text, limits):
            return _YamlScan(limits, keys).run(parser)
    finally:
        parser.dispose()
