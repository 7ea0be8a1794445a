"""The OpenAPI/Swagger document: parsed within the limits, its components indexed, its ``$ref``s
classified and resolved one level at a time (so circular schemas cannot loop)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

import yaml

from config.base.validation import ascii_digits
from knowledge.ingestion.formats.openapi.text import ref_display_name, str_keys
from knowledge.ingestion.limits import IngestLimits, json_loads_bounded, yaml_load_bounded
from knowledge.ingestion.types import UnreadableDocument

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# Component types in the order their sections are emitted (OpenAPI 3.x).
COMPONENT_TYPES_3 = (
    "schemas",
    "responses",
    "parameters",
    "examples",
    "requestBodies",
    "headers",
    "securitySchemes",
    "links",
    "callbacks",
    "pathItems",  # OpenAPI 3.1
)
# Swagger 2.0 top-level containers -> OpenAPI 3 component type.
SWAGGER2_COMPONENTS = {
    "definitions": "schemas",
    "parameters": "parameters",
    "responses": "responses",
    "securityDefinitions": "securitySchemes",
}


# Keys whose mapping value is keyed by *names* (property names, status codes,
# media types ...) rather than by keywords. Inside them, a key such as
# "default", "example" or "$ref" is a name, not a keyword.
_NAME_MAPS = frozenset(
    {
        "properties",
        "patternProperties",
        "definitions",
        "$defs",
        "dependentSchemas",
        "responses",
        "headers",
        "content",
        "encoding",
        "links",
        "callbacks",
        "schemas",
        "parameters",
        "examples",
        "requestBodies",
        "securitySchemes",
        "securityDefinitions",
        "pathItems",
        "paths",
        "webhooks",
        "mapping",
        "variables",
        "scopes",
    }
)
# Keywords whose values are literal data: a "$ref" inside them is not a reference.
_LITERAL_KEYS = frozenset({"example", "examples", "default", "enum", "const", "value"})


def document_parse(filename: str, data: bytes, limits: IngestLimits) -> Any:
    """JSON or YAML within the nesting and YAML-alias limits (see knowledge.ingestion.limits)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UnreadableDocument(f"{filename}: not valid UTF-8 text (byte {exc.start})") from None
    if text.lstrip().startswith("{"):
        try:
            return json_loads_bounded(text, limits)
        except json.JSONDecodeError as exc:
            raise UnreadableDocument(
                f"{filename}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    try:
        return yaml_load_bounded(text, limits)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "parse error"
        raise UnreadableDocument(f"{filename}: invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise UnreadableDocument(f"{filename}: invalid YAML: {exc}") from None


class Spec:
    """Parsed document plus reference lookups (cached, never recursive)."""

    def __init__(self, filename: str, root: dict) -> None:
        self.filename = filename
        self.root = root
        self.swagger2 = "openapi" not in root
        self.basename = filename.replace("\\", "/").rsplit("/", 1)[-1]
        self._targets: dict[str, Any] = {}
        # component element id -> (type, name, node); in emission order
        self.components: dict[str, tuple[str, str, Any]] = {}
        if self.swagger2:
            for container, ctype in SWAGGER2_COMPONENTS.items():
                for name, node in str_keys(root.get(container)):
                    self.components[self.component_id(ctype, name)] = (ctype, name, node)
        else:
            comps = root.get("components")
            if isinstance(comps, dict):
                for ctype in COMPONENT_TYPES_3:
                    for name, node in str_keys(comps.get(ctype)):
                        self.components[self.component_id(ctype, name)] = (ctype, name, node)

    def component_id(self, ctype: str, name: str) -> str:
        return f"{self.filename}:components/{ctype}/{name}"

    # -- refs

    def _local_fragment(self, ref: str) -> str | None:
        """The JSON pointer of a local ref, or None for an external one."""
        doc, sep, fragment = ref.partition("#")
        if not sep:
            return None
        if doc and doc.replace("\\", "/").rsplit("/", 1)[-1].lstrip("./") != self.basename:
            return None
        return fragment

    @staticmethod
    def _segments(fragment: str) -> list[str]:
        fragment = unquote(fragment)
        if not fragment.startswith("/"):
            return []
        return [s.replace("~1", "/").replace("~0", "~") for s in fragment[1:].split("/")]

    def classify(self, ref: str) -> tuple[str, str | None]:
        """('external'|'component'|'other'|'missing', component id or None)."""
        fragment = self._local_fragment(ref)
        if fragment is None:
            return "external", None
        segs = self._segments(fragment)
        cid = None
        if self.swagger2:
            if len(segs) >= 2 and segs[0] in SWAGGER2_COMPONENTS:
                cid = self.component_id(SWAGGER2_COMPONENTS[segs[0]], segs[1])
        elif len(segs) >= 3 and segs[0] == "components":
            cid = self.component_id(segs[1], segs[2])
        if cid is not None:
            return ("component", cid) if cid in self.components else ("missing", None)
        if not segs or self.resolve(ref) is not None:
            return "other", None
        return "missing", None

    def resolve(self, ref: Any) -> Any:
        """The node a local ref points to (one level, no chasing), or None."""
        if not isinstance(ref, str):
            return None
        if ref in self._targets:
            return self._targets[ref]
        node: Any = None
        fragment = self._local_fragment(ref)
        if fragment is not None:
            node = self.root
            for seg in self._segments(fragment):
                if isinstance(node, dict):
                    node = node.get(seg)
                elif isinstance(node, list) and ascii_digits(seg) and int(seg) < len(node):
                    node = node[int(seg)]
                else:
                    node = None
                if node is None:
                    break
        self._targets[ref] = node
        return node

    def deref(self, node: Any) -> tuple[Any, str | None]:
        """Resolve a ``{"$ref": ...}`` node exactly one level: (target or {}, ref name)."""
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            target = self.resolve(ref)
            return (target if isinstance(target, dict) else {}), ref_display_name(ref)
        return node, None


def collect_refs(roots: Iterable[Any]) -> list[str]:
    """Every ``$ref`` string found anywhere under ``roots`` (iterative, cycle-safe)."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(r, False) for r in roots]
    while stack:
        node, names = stack.pop()
        if isinstance(node, dict):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for key, value in node.items():
                if names:
                    stack.append((value, False))
                    continue
                if key == "$ref":
                    if isinstance(value, str):
                        found.append(value)
                    continue
                if key in _LITERAL_KEYS and not (key == "examples" and isinstance(value, dict)):
                    continue
                if isinstance(value, (dict, list)):
                    stack.append((value, key in _NAME_MAPS and isinstance(value, dict)))
        elif isinstance(node, list):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for item in node:
                if isinstance(item, (dict, list)):
                    stack.append((item, False))
    return found
