"""OpenAPI / Swagger extraction: spec bytes in, readable sections out.

One section per operation (``operation=METHOD /path``) and one per component
(``component=TYPE/NAME``). Each section carries its own ``element_id``, the
component ids it references directly through ``$ref`` (``ref_ids``) and the ids
of the sections that reference it (``referenced_by``). References are never
followed transitively here: the retriever expands them breadth-first at query
time. Text is rendered as readable prose/outlines, never as a JSON dump, and a
``$ref`` is resolved at most one level (to show a name), so circular schemas
cannot make rendering loop.

Pure: no Django, no database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

import yaml

from knowledge.ingestion.limits import DEFAULT_LIMITS, IngestLimits, json_loads_bounded, yaml_load_bounded
from knowledge.ingestion.types import ExtractionError, Section

__all__ = ["extract_openapi"]

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

_INLINE_WS = re.compile(r"[ \t\f\v\u00a0]+")
_ANY_WS = re.compile(r"\s+")


# --------------------------------------------------------------------------- parsing


def _parse(filename: str, data: bytes, limits: IngestLimits) -> Any:
    """JSON or YAML within the nesting and YAML-alias limits (see knowledge.ingestion.limits)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"{filename}: not valid UTF-8 text (byte {exc.start})") from None
    if text.lstrip().startswith("{"):
        try:
            return json_loads_bounded(text, limits)
        except json.JSONDecodeError as exc:
            raise ExtractionError(
                f"{filename}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    try:
        return yaml_load_bounded(text, limits)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "parse error"
        raise ExtractionError(f"{filename}: invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise ExtractionError(f"{filename}: invalid YAML: {exc}") from None


# --------------------------------------------------------------------------- text helpers


def _as_text(value: Any) -> str:
    """Text fields that hold a list or mapping (a malformed spec, or YAML aliases) get a bounded preview:
    ``str()`` of an aliased structure can be billions of characters."""
    if isinstance(value, (dict, list, tuple)):
        return _preview(value, NON_TEXT_PREVIEW_CHARS)
    return str(value)


def _normalize_block(text: Any) -> str:
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


def _one_line(text: Any) -> str:
    if text is None:
        return ""
    return _ANY_WS.sub(" ", _as_text(text)).strip()


def _preview(value: Any, limit: int) -> str:
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


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    return _preview(value, 60)


def _enum_text(values: Any) -> str:
    if not isinstance(values, list):
        return ""
    shown = [_one_line(_scalar(v)) for v in values[:MAX_ENUM_VALUES]]
    text = " | ".join(shown)
    if len(values) > MAX_ENUM_VALUES:
        text += f" | … ({len(values) - MAX_ENUM_VALUES} more)"
    return text


def _ref_name(ref: str) -> str:
    """The last segment of a $ref, decoded: '#/components/schemas/Pet' -> 'Pet'."""
    doc, _, fragment = ref.partition("#")
    if fragment:
        segment = unquote(fragment).rstrip("/").rsplit("/", 1)[-1]
        return segment.replace("~1", "/").replace("~0", "~") or ref
    return doc.rstrip("/").rsplit("/", 1)[-1] or ref


def _str_keys(mapping: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(mapping, dict):
        for key, value in mapping.items():
            yield str(key), value


# --------------------------------------------------------------------------- the document


class _Spec:
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
                for name, node in _str_keys(root.get(container)):
                    self.components[self.component_id(ctype, name)] = (ctype, name, node)
        else:
            comps = root.get("components")
            if isinstance(comps, dict):
                for ctype in COMPONENT_TYPES_3:
                    for name, node in _str_keys(comps.get(ctype)):
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
                elif isinstance(node, list) and seg.isdigit() and int(seg) < len(node):
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
            return (target if isinstance(target, dict) else {}), _ref_name(ref)
        return node, None


def _collect_refs(roots: Iterable[Any]) -> list[str]:
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


# --------------------------------------------------------------------------- schema rendering


def _label(schema: Any, depth: int = 0) -> str:
    """A short type label: 'string', 'array of Pet', 'one of: string | integer'."""
    if schema is True or schema == {}:
        return "any"
    if schema is False:
        return "nothing"
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("$ref"), str):
        return _ref_name(schema["$ref"])
    if depth > MAX_LABEL_DEPTH:
        return "…"
    for key, word, sep in (
        ("allOf", "all of", " + "),
        ("oneOf", "one of", " | "),
        ("anyOf", "any of", " | "),
    ):
        members = schema.get(key)
        if isinstance(members, list) and members:
            shown = [_label(m, depth + 1) for m in members[:MAX_COMBINATION_MEMBERS]]
            if len(members) > MAX_COMBINATION_MEMBERS:
                shown.append(f"… ({len(members) - MAX_COMBINATION_MEMBERS} more)")
            text = f"{word}: {sep.join(shown)}"
            return f"({text})" if depth else text
    raw = schema.get("type")
    types = [str(t) for t in raw] if isinstance(raw, list) else ([str(raw)] if raw else [])
    if not types:
        if "items" in schema:
            types = ["array"]
        elif "properties" in schema or "additionalProperties" in schema:
            types = ["object"]
        elif "const" in schema:
            return f"constant {_one_line(_scalar(schema['const']))}"
        elif "enum" in schema:
            types = ["enum"]
        elif "not" in schema:
            return f"not {_label(schema['not'], depth + 1)}"
        else:
            return "any"
    out = []
    for t in types:
        if t == "array":
            items = schema.get("items")
            out.append(f"array of {_label(items, depth + 1)}" if items is not None else "array")
        elif t == "object" and depth == 0 and _is_map(schema):
            out.append(f"map of {_label(schema.get('additionalProperties'), depth + 1)}")
        else:
            out.append(t)
    return " or ".join(out)


def _is_map(schema: dict) -> bool:
    extra = schema.get("additionalProperties")
    return isinstance(extra, dict) and bool(extra) and not schema.get("properties")


def _attributes(schema: Any, required: bool) -> list[str]:
    """Type, format, nullability, enum values, default ... for one field."""
    attrs = [_label(schema)]
    if isinstance(schema, dict):
        if schema.get("format"):
            attrs.append(str(schema["format"]))
        if schema.get("nullable") is True:
            attrs.append("nullable")
        if "enum" in schema and not isinstance(schema.get("$ref"), str):
            enum = _enum_text(schema.get("enum"))
            if enum:
                attrs.append(f"one of {enum}")
        if "default" in schema:
            attrs.append(f"default {_one_line(_preview(schema['default'], 60))}")
        if schema.get("readOnly") is True:
            attrs.append("read-only")
        if schema.get("writeOnly") is True:
            attrs.append("write-only")
        if schema.get("deprecated") is True:
            attrs.append("deprecated")
    if required:
        attrs.append("required")
    return attrs


def _field_line(name: str, schema: Any, required: bool, with_example: bool = True) -> str:
    line = f"{name} ({', '.join(_attributes(schema, required))})"
    if isinstance(schema, dict):
        description = _one_line(schema.get("description") or schema.get("title"))
        if description:
            line += f": {description}"
        if with_example and "example" in schema:
            line += f" (example: {_preview(schema['example'], PROPERTY_EXAMPLE_CHARS)})"
    return line


def _inline_object(schema: Any) -> dict | None:
    """The inline object schema whose fields deserve a nested outline, if any."""
    if not isinstance(schema, dict) or "$ref" in schema:
        return None
    if isinstance(schema.get("properties"), dict) and schema["properties"]:
        return schema
    items = schema.get("items")
    if (
        isinstance(items, dict)
        and "$ref" not in items
        and isinstance(items.get("properties"), dict)
        and items["properties"]
    ):
        return items
    return None


def _required_set(schema: dict) -> set[str]:
    req = schema.get("required")
    return {str(r) for r in req} if isinstance(req, list) else set()


def _property_lines(
    schema: dict, lines: list[str], indent: str, depth: int, max_depth: int, examples: bool
) -> None:
    required = _required_set(schema)
    for name, sub in _str_keys(schema.get("properties")):
        lines.append(f"{indent}- {_field_line(name, sub, name in required, examples)}")
        child = _inline_object(sub)
        if child is not None and depth < max_depth:
            _property_lines(child, lines, indent + "  ", depth + 1, max_depth, examples)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra and schema.get("properties"):
        lines.append(f"{indent}- (additional properties) ({_label(extra)})")


def _schema_outline(schema: Any, max_depth: int, examples: bool) -> list[str]:
    """Readable outline of one schema's own structure (refs named, never followed)."""
    lines: list[str] = []
    if not isinstance(schema, dict):
        return lines
    for key, word in (("allOf", "All of"), ("oneOf", "One of"), ("anyOf", "Any of")):
        members = schema.get(key)
        if isinstance(members, list) and members:
            shown = [_label(m, 1) for m in members[:MAX_COMBINATION_MEMBERS]]
            if len(members) > MAX_COMBINATION_MEMBERS:
                shown.append(f"… ({len(members) - MAX_COMBINATION_MEMBERS} more)")
            lines.append(f"{word}: {', '.join(shown)}")
            for member in members[:MAX_COMBINATION_MEMBERS]:
                if _inline_object(member) is member:
                    _property_lines(member, lines, "", 0, max_depth, examples)
    if isinstance(schema.get("not"), (dict, bool)):
        lines.append(f"Not: {_label(schema['not'], 1)}")
    if isinstance(schema.get("properties"), dict) and schema["properties"]:
        _property_lines(schema, lines, "", 0, max_depth, examples)
    elif _is_map(schema):
        lines.append(f"Values: {_label(schema['additionalProperties'], 1)}")
    items = schema.get("items")
    if isinstance(items, dict):
        if "$ref" not in items and isinstance(items.get("properties"), dict):
            lines.append("Items: object with fields:")
            _property_lines(items, lines, "  ", 1, max_depth + 1, examples)
        elif "$ref" not in items and any(k in items for k in ("allOf", "oneOf", "anyOf")):
            lines.append(f"Items: {_label(items, 1)}")
    return lines


def _body_label(schema: Any) -> str:
    """Label for a response body: a schema name, or an inline shape with its fields."""
    label = _label(schema)
    obj = schema if isinstance(schema, dict) and "$ref" not in schema else None
    if obj is not None and isinstance(obj.get("properties"), dict) and obj["properties"]:
        fields = [
            f"{name}: {_label(sub, 1)}"
            for name, sub in list(_str_keys(obj["properties"]))[:MAX_INLINE_FIELDS]
        ]
        more = len(obj["properties"]) - MAX_INLINE_FIELDS
        if more > 0:
            fields.append(f"… ({more} more)")
        label = f"{label} {{{', '.join(fields)}}}"
    return label


# --------------------------------------------------------------------------- operations


def _param_key(spec: _Spec, param: Any) -> tuple[str, str] | None:
    target, _ = spec.deref(param)
    if isinstance(target, dict) and target.get("name") is not None:
        return str(target.get("name")), str(target.get("in", ""))
    return None


def _merged_parameters(spec: _Spec, path_params: Any, op_params: Any) -> list[Any]:
    """Path-level parameters overridden by operation-level ones (same name + in)."""
    op_list = [p for p in op_params if isinstance(p, dict)] if isinstance(op_params, list) else []
    path_list = [p for p in path_params if isinstance(p, dict)] if isinstance(path_params, list) else []
    op_keys = {k for k in (_param_key(spec, p) for p in op_list) if k}
    merged = [p for p in path_list if _param_key(spec, p) not in op_keys]
    return merged + op_list


def _param_schema(param: dict, swagger2: bool) -> Any:
    if isinstance(param.get("schema"), dict):
        return param["schema"]
    content = param.get("content")
    if isinstance(content, dict):
        for _, media in _str_keys(content):
            if isinstance(media, dict) and "schema" in media:
                return media["schema"]
    if swagger2 or "type" in param:
        return {k: v for k, v in param.items() if k in ("type", "format", "items", "enum", "default")}
    return None


def _param_line(spec: _Spec, param: dict) -> str:
    target, ref_name = spec.deref(param)
    if not target:
        return f"- {ref_name or 'parameter'} (see parameter {ref_name})"
    name = str(target.get("name", ref_name or "?"))
    attrs = [str(target.get("in", "?"))]
    schema = _param_schema(target, spec.swagger2)
    type_attrs = _attributes(schema, False) if schema is not None else []
    if type_attrs and type_attrs[0] == "any" and schema in (None, {}):
        type_attrs = type_attrs[1:]
    attrs.extend(type_attrs)
    if target.get("required") is True:
        attrs.append("required")
    if target.get("deprecated") is True and "deprecated" not in attrs:
        attrs.append("deprecated")
    line = f"- {name} ({', '.join(attrs)})"
    description = _one_line(target.get("description"))
    if description:
        line += f": {description}"
    if ref_name and ref_name != name:
        line += f" [parameter {ref_name}]"
    return line


def _content_part(spec: _Spec, content: Any, max_depth: int) -> list[str]:
    """Media types with each schema named and outlined (refs resolved one level).

    Media types whose schemas render identically are listed together once.
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    for media_type, media in _str_keys(content):
        schema = media.get("schema") if isinstance(media, dict) else None
        groups.setdefault(tuple(_schema_lines(spec, schema, max_depth)), []).append(media_type)
    lines: list[str] = []
    for rendered, types in groups.items():
        label, *rest = rendered
        lines.append(f"Schema ({', '.join(types)}): {label}")
        lines.extend(rest)
    return lines


def _schema_lines(spec: _Spec, schema: Any, max_depth: int) -> list[str]:
    """[label, description/required/outline lines...] for a body schema."""
    lines = [_label(schema) if schema is not None else "not specified"]
    if schema is None:
        return lines
    target, ref_name = spec.deref(schema)
    if not isinstance(target, dict) or (ref_name and "$ref" in target):
        return lines  # a missing ref, or a ref to a ref: name only
    if ref_name:
        description = _one_line(target.get("description") or target.get("title"))
        if description and description != ref_name:
            lines.append(f"{ref_name}: {description}")
    required = sorted(_required_set(target))
    if required:
        lines.append(f"Required fields: {', '.join(required)}")
    lines.extend(_schema_outline(target, max_depth, examples=False))
    return lines


def _request_body_part(spec: _Spec, body: Any) -> str:
    target, ref_name = spec.deref(body)
    if not isinstance(target, dict):
        return ""
    head = "Request body"
    if target.get("required") is True:
        head += " (required)"
    if ref_name:
        head += f" [request body {ref_name}]"
    lines = [head + ":"]
    description = _one_line(target.get("description"))
    if description:
        lines.append(description)
    content = target.get("content")
    if isinstance(content, dict) and content:
        lines.append(f"Content types: {', '.join(k for k, _ in _str_keys(content))}")
        if ref_name:  # a referenced body: name its schemas, do not outline a second level
            for media_type, media in _str_keys(content):
                schema = media.get("schema") if isinstance(media, dict) else None
                lines.append(f"Schema ({media_type}): {_label(schema)}")
        else:
            lines.extend(_content_part(spec, content, OPERATION_PROPERTY_DEPTH))
    return "\n".join(lines)


def _swagger2_body_part(spec: _Spec, body_param: dict, consumes: Any) -> str:
    target, ref_name = spec.deref(body_param)
    if not isinstance(target, dict):
        return ""
    head = "Request body"
    if target.get("required") is True:
        head += " (required)"
    if ref_name:
        head += f" [parameter {ref_name}]"
    lines = [head + ":"]
    if target.get("name"):
        lines.append(f"Body parameter: {target['name']}")
    description = _one_line(target.get("description"))
    if description:
        lines.append(description)
    types = [str(c) for c in consumes] if isinstance(consumes, list) and consumes else []
    if types:
        lines.append(f"Content types: {', '.join(types)}")
    content = {", ".join(types) or "body": {"schema": target.get("schema")}}
    lines.extend(_content_part(spec, content, OPERATION_PROPERTY_DEPTH))
    return "\n".join(lines)


def _response_line(spec: _Spec, status: str, response: Any) -> str:
    target, ref_name = spec.deref(response)
    parts: list[str] = []
    description = _one_line(target.get("description")) if isinstance(target, dict) else ""
    parts.append(description or (ref_name or "no description"))
    bodies: list[tuple[str, Any]] = []
    if isinstance(target, dict):
        if isinstance(target.get("content"), dict):
            bodies = [
                (mt, media.get("schema"))
                for mt, media in _str_keys(target["content"])
                if isinstance(media, dict) and "schema" in media
            ]
        elif "schema" in target:
            bodies = [("", target["schema"])]
    if bodies:
        labels: dict[str, list[str]] = {}
        for media_type, schema in bodies:
            labels.setdefault(_body_label(schema), []).append(media_type)
        if len(labels) == 1:
            parts.append(f"body: {next(iter(labels))}")
        else:
            parts.append("body: " + "; ".join(f"{', '.join(t)}: {lab}" for lab, t in labels.items()))
    if isinstance(target, dict) and isinstance(target.get("headers"), dict) and target["headers"]:
        parts.append(f"headers: {', '.join(k for k, _ in _str_keys(target['headers']))}")
    line = f"- {status}: {'; '.join(parts)}"
    if ref_name:
        line += f" [response {ref_name}]"
    return line


def _security_text(security: Any) -> str:
    if not isinstance(security, list):
        return ""
    if not security:
        return "Security: none (no authentication required)"
    options = []
    for requirement in security:
        if not isinstance(requirement, dict):
            continue
        if not requirement:
            options.append("anonymous")
            continue
        names = []
        for name, scopes in _str_keys(requirement):
            if isinstance(scopes, list) and scopes:
                names.append(f"{name} (scopes: {', '.join(str(s) for s in scopes)})")
            else:
                names.append(name)
        options.append(" and ".join(names))
    return f"Security: {' or '.join(options)}" if options else ""


def _operation_text(spec: _Spec, method: str, path: str, op: dict, params: list[Any]) -> str:
    upper = method.upper()
    parts: list[str] = []
    summary = _one_line(op.get("summary"))
    parts.append(f"{upper} {path} — {summary}" if summary else f"{upper} {path}")

    meta_lines = []
    if op.get("operationId") is not None:
        meta_lines.append(f"Operation ID: {op['operationId']}")
    tags = [str(t) for t in op.get("tags") or [] if t is not None] if isinstance(op.get("tags"), list) else []
    if tags:
        meta_lines.append(f"Tags: {', '.join(tags)}")
    docs = op.get("externalDocs")
    if isinstance(docs, dict) and docs.get("url"):
        meta_lines.append(f"Documentation: {docs['url']}")
    if meta_lines:
        parts.append("\n".join(meta_lines))

    description = _normalize_block(op.get("description"))
    if description:
        parts.append(description)
    if op.get("deprecated") is True:
        parts.append("Deprecated: this operation is deprecated.")

    body_params = []
    shown = []
    for param in params:
        target, _ = spec.deref(param)
        if spec.swagger2 and isinstance(target, dict) and target.get("in") == "body":
            body_params.append(param)
        else:
            shown.append(param)
    if shown:
        parts.append("\n".join(["Parameters:"] + [_param_line(spec, p) for p in shown]))

    if "requestBody" in op:
        body = _request_body_part(spec, op["requestBody"])
        if body:
            parts.append(body)
    consumes = op.get("consumes", spec.root.get("consumes"))
    for param in body_params:
        body = _swagger2_body_part(spec, param, consumes)
        if body:
            parts.append(body)

    responses = op.get("responses")
    if isinstance(responses, dict) and responses:
        lines = ["Responses:"]
        for status, response in _str_keys(responses):
            if status.startswith("x-"):
                continue
            lines.append(_response_line(spec, status, response))
        produces = op.get("produces", spec.root.get("produces"))
        if spec.swagger2 and isinstance(produces, list) and produces:
            lines.append(f"Produces: {', '.join(str(p) for p in produces)}")
        parts.append("\n".join(lines))

    security = op.get("security", spec.root.get("security"))
    security_text = _security_text(security)
    if security_text:
        parts.append(security_text)

    callbacks = op.get("callbacks")
    if isinstance(callbacks, dict) and callbacks:
        names = []
        for name, cb in _str_keys(callbacks):
            _, ref_name = spec.deref(cb)
            names.append(f"{name} [callback {ref_name}]" if ref_name else name)
        parts.append(f"Callbacks: {', '.join(names)}")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- components


_TYPE_TITLES = {
    "schemas": "Schema",
    "responses": "Response",
    "parameters": "Parameter",
    "examples": "Example",
    "requestBodies": "Request body",
    "headers": "Header",
    "securitySchemes": "Security scheme",
    "links": "Link",
    "callbacks": "Callback",
    "pathItems": "Path item",
}


def _schema_component_text(name: str, schema: Any) -> list[str]:
    parts = [f"Schema {name}"]
    if not isinstance(schema, dict):
        parts.append(f"Type: {_label(schema)}")
        return parts
    if isinstance(schema.get("$ref"), str):
        parts.append(f"Alias of: {_ref_name(schema['$ref'])}")
    title = _one_line(schema.get("title"))
    if title and title != name:
        parts.append(f"Title: {title}")
    description = _normalize_block(schema.get("description"))
    if description:
        parts.append(description)
    facts = []
    label = _label(schema)
    if "$ref" not in schema and not label.startswith(("all of", "one of", "any of")):
        facts.append(f"Type: {label}")
    if schema.get("format"):
        facts.append(f"Format: {schema['format']}")
    if schema.get("nullable") is True:
        facts.append("Nullable: yes")
    if "enum" in schema:
        enum = _enum_text(schema.get("enum"))
        if enum:
            facts.append(f"Allowed values: {enum}")
    if "default" in schema:
        facts.append(f"Default: {_preview(schema['default'], 100)}")
    if schema.get("deprecated") is True:
        facts.append("Deprecated: yes")
    required = (
        [str(r) for r in schema.get("required") or []] if isinstance(schema.get("required"), list) else []
    )
    if required:
        facts.append(f"Required: {', '.join(required)}")
    if facts:
        parts.append("\n".join(facts))
    outline = _schema_outline(schema, COMPONENT_PROPERTY_DEPTH, examples=True)
    if outline:
        if isinstance(schema.get("properties"), dict) and schema["properties"]:
            outline.insert(0, "Properties:")
        parts.append("\n".join(outline))
    discriminator = schema.get("discriminator")
    if isinstance(discriminator, dict) and discriminator.get("propertyName"):
        text = f"Discriminator: {discriminator['propertyName']}"
        mapping = discriminator.get("mapping")
        if isinstance(mapping, dict) and mapping:
            text += "; " + ", ".join(
                f"{k} → {_ref_name(str(v)) if '/' in str(v) else v}" for k, v in _str_keys(mapping)
            )
        parts.append(text)
    elif isinstance(discriminator, str):
        parts.append(f"Discriminator: {discriminator}")
    if "example" in schema:
        parts.append(f"Example: {_preview(schema['example'], SCHEMA_EXAMPLE_CHARS)}")
    elif isinstance(schema.get("examples"), list) and schema["examples"]:
        parts.append(f"Example: {_preview(schema['examples'][0], SCHEMA_EXAMPLE_CHARS)}")
    return parts


def _component_text(spec: _Spec, ctype: str, name: str, node: Any) -> str:
    if ctype == "schemas":
        return "\n\n".join(_schema_component_text(name, node))
    title = _TYPE_TITLES.get(ctype, ctype)
    parts = [f"{title} {name}"]
    if not isinstance(node, dict):
        parts.append(_preview(node, 200))
        return "\n\n".join(parts)
    if isinstance(node.get("$ref"), str):
        parts.append(f"Alias of: {_ref_name(node['$ref'])}")
    summary = _one_line(node.get("summary"))
    if summary:
        parts.append(summary)

    if ctype == "parameters":
        line = _param_line(spec, node)
        description = _normalize_block(node.get("description"))
        if description and "\n" in description:
            parts.append(line.split(": ", 1)[0].lstrip("- "))
            parts.append(description)
        else:
            parts.append(line.lstrip("- "))
        if node.get("in") == "body" and node.get("schema") is not None:
            parts.append(f"Body schema: {_label(node['schema'])}")
        if "example" in node:
            parts.append(f"Example: {_preview(node['example'], SCHEMA_EXAMPLE_CHARS)}")
        return "\n\n".join(parts)

    description = _normalize_block(node.get("description"))
    if description:
        parts.append(description)

    if ctype == "examples":
        if "value" in node:
            parts.append(f"Value: {_preview(node['value'], EXAMPLE_VALUE_CHARS)}")
        if node.get("externalValue"):
            parts.append(f"External value: {node['externalValue']}")
    elif ctype in ("responses", "requestBodies"):
        if node.get("required") is True:
            parts.append("Required: yes")
        content = node.get("content")
        if isinstance(content, dict) and content:
            lines = [f"Content types: {', '.join(k for k, _ in _str_keys(content))}"]
            lines.extend(_content_part(spec, content, OPERATION_PROPERTY_DEPTH))
            parts.append("\n".join(lines))
        elif "schema" in node:  # Swagger 2 response
            parts.append(f"Body: {_body_label(node['schema'])}")
        headers = node.get("headers")
        if isinstance(headers, dict) and headers:
            lines = ["Headers:"]
            for header_name, header in _str_keys(headers):
                target, ref_name = spec.deref(header)
                schema = target.get("schema", target) if isinstance(target, dict) else None
                line = f"- {header_name} ({_label(schema)})"
                desc = _one_line(target.get("description")) if isinstance(target, dict) else ""
                if desc:
                    line += f": {desc}"
                if ref_name:
                    line += f" [header {ref_name}]"
                lines.append(line)
            parts.append("\n".join(lines))
    elif ctype == "headers":
        schema = node.get("schema", node)
        facts = [f"Type: {', '.join(_attributes(schema, node.get('required') is True))}"]
        if "example" in node:
            facts.append(f"Example: {_preview(node['example'], SCHEMA_EXAMPLE_CHARS)}")
        parts.append("\n".join(facts))
    elif ctype == "securitySchemes":
        facts = []
        for key, word in (
            ("type", "Type"),
            ("scheme", "Scheme"),
            ("bearerFormat", "Bearer format"),
            ("in", "In"),
            ("name", "Name"),
            ("flow", "Flow"),
            ("authorizationUrl", "Authorization URL"),
            ("tokenUrl", "Token URL"),
            ("openIdConnectUrl", "OpenID Connect URL"),
        ):
            if node.get(key):
                facts.append(f"{word}: {node[key]}")
        if facts:
            parts.append("\n".join(facts))
        flows = node.get("flows")
        if isinstance(flows, dict):
            for flow_name, flow in _str_keys(flows):
                if not isinstance(flow, dict):
                    continue
                lines = [f"Flow {flow_name}:"]
                for key in ("authorizationUrl", "tokenUrl", "refreshUrl"):
                    if flow.get(key):
                        lines.append(f"{key}: {flow[key]}")
                lines.extend(_scope_lines(flow.get("scopes")))
                parts.append("\n".join(lines))
        scope_lines = _scope_lines(node.get("scopes"))
        if scope_lines:
            parts.append("\n".join(scope_lines))
    elif ctype == "links":
        facts = []
        if node.get("operationId"):
            facts.append(f"Operation ID: {node['operationId']}")
        if node.get("operationRef"):
            facts.append(f"Operation: {node['operationRef']}")
        for pname, expr in _str_keys(node.get("parameters")):
            facts.append(f"Parameter {pname} = {_one_line(_scalar(expr))}")
        if "requestBody" in node:
            facts.append(f"Request body: {_preview(node['requestBody'], 200)}")
        if facts:
            parts.append("\n".join(facts))
    elif ctype in ("callbacks", "pathItems"):
        items = {"": node} if ctype == "pathItems" else dict(_str_keys(node))
        lines = []
        for expression, path_item in items.items():
            target, _ = spec.deref(path_item)
            if not isinstance(target, dict):
                continue
            for method, op in _str_keys(target):
                if method.lower() in HTTP_METHODS and isinstance(op, dict):
                    text = f"- {method.upper()} {expression}".rstrip()
                    summary = _one_line(op.get("summary") or op.get("description"))
                    if summary:
                        text += f": {summary}"
                    lines.append(text)
        if lines:
            parts.append("\n".join(["Operations:"] + lines))
    return "\n\n".join(parts)


def _scope_lines(scopes: Any) -> list[str]:
    if not isinstance(scopes, dict) or not scopes:
        return []
    return ["Scopes:"] + [f"- {s}: {_one_line(d)}" for s, d in _str_keys(scopes)]


# --------------------------------------------------------------------------- entry point


def extract_openapi(filename: str, data: bytes, *, limits: IngestLimits = DEFAULT_LIMITS) -> list[Section]:
    """Sections for every operation and component of an OpenAPI/Swagger document.

    Accepts OpenAPI 3.0/3.1 and Swagger 2.0, JSON or YAML. Raises
    ``ExtractionError`` for unparsable input (with the parser's line and column)
    and for documents that are not OpenAPI/Swagger specs.
    """
    root = _parse(filename, data, limits)
    if not isinstance(root, dict):
        raise ExtractionError(f"{filename}: not an OpenAPI document (the top level is not a mapping)")
    if "openapi" not in root and "swagger" not in root:
        raise ExtractionError(f"{filename}: not an OpenAPI document (no 'openapi' or 'swagger' version key)")
    spec = _Spec(filename, root)

    # (element_id, source_ref, text, heading_path, metadata, raw refs)
    drafts: list[tuple[str, str, str, tuple[str, ...], dict, list[str]]] = []

    for path, item in _str_keys(root.get("paths")):
        if path.startswith("x-") or not isinstance(item, dict):
            continue
        item_refs: list[str] = []
        if isinstance(item.get("$ref"), str):
            item_refs.append(item["$ref"])
            target = spec.resolve(item["$ref"])
            if isinstance(target, dict):
                item = {**target, **{k: v for k, v in item.items() if k != "$ref"}}
        path_params = item.get("parameters")
        for key, op in item.items():
            method = str(key).lower()
            if method not in HTTP_METHODS or not isinstance(op, dict):
                continue
            params = _merged_parameters(spec, path_params, op.get("parameters"))
            op_ids = (
                {id(p) for p in op.get("parameters") or []}
                if isinstance(op.get("parameters"), list)
                else set()
            )
            inherited = [p for p in params if id(p) not in op_ids]
            refs = item_refs + _collect_refs([op, inherited])
            tags = (
                [str(t) for t in op.get("tags") or [] if t is not None]
                if isinstance(op.get("tags"), list)
                else []
            )
            upper = method.upper()
            drafts.append(
                (
                    f"{filename}:paths/{path.lstrip('/')}/{method}",
                    f"operation={upper} {path}",
                    _operation_text(spec, method, path, op, params),
                    (tags[0] if tags else "Operations", f"{upper} {path}"),
                    {
                        "type": "operation",
                        "method": upper,
                        "path": path,
                        "operation_id": (
                            str(op["operationId"]) if op.get("operationId") is not None else None
                        ),
                        "tags": tags,
                    },
                    refs,
                )
            )

    for element_id, (ctype, name, node) in spec.components.items():
        drafts.append(
            (
                element_id,
                f"component={ctype}/{name}",
                _component_text(spec, ctype, name, node),
                ("Components", ctype, name),
                {"type": "component", "component_type": ctype, "name": name},
                _collect_refs([node]),
            )
        )

    resolved: list[tuple[tuple[str, ...], list[str]]] = []
    referenced_by: dict[str, set[str]] = {}
    for element_id, _, _, _, _metadata, refs in drafts:
        ids: set[str] = set()
        missing: set[str] = set()
        for ref in refs:
            kind, cid = spec.classify(ref)
            if kind == "component" and cid:
                ids.add(cid)
            elif kind == "missing":
                missing.add(ref)
        for cid in ids:
            referenced_by.setdefault(cid, set()).add(element_id)
        resolved.append((tuple(sorted(ids)), sorted(missing)))

    sections: list[Section] = []
    for draft, (ids, missing) in zip(drafts, resolved, strict=True):
        element_id, source_ref, text, heading, metadata, _ = draft
        if missing:
            metadata["missing_refs"] = missing
        sections.append(
            Section(
                source_ref=source_ref,
                text=text,
                heading_path=heading,
                element_id=element_id,
                ref_ids=ids,
                referenced_by=tuple(sorted(referenced_by.get(element_id, ()))),
                metadata=metadata,
            )
        )
    return sections
