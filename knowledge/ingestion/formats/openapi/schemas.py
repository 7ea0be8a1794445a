"""Schemas as readable outlines: a label per type, one line per property with its attributes."""

from __future__ import annotations

from typing import Any

from knowledge.ingestion.formats.openapi.text import (
    MAX_COMBINATION_MEMBERS,
    MAX_INLINE_FIELDS,
    MAX_LABEL_DEPTH,
    PROPERTY_EXAMPLE_CHARS,
    enum_text,
    one_line,
    ref_display_name,
    scalar,
    str_keys,
    value_preview,
)


def schema_label(schema: Any, depth: int = 0) -> str:
    """A short type label: 'string', 'array of Pet', 'one of: string | integer'."""
    if schema is True or schema == {}:
        return "any"
    if schema is False:
        return "nothing"
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("$ref"), str):
        return ref_display_name(schema["$ref"])
    if depth > MAX_LABEL_DEPTH:
        return "…"
    for key, word, sep in (
        ("allOf", "all of", " + "),
        ("oneOf", "one of", " | "),
        ("anyOf", "any of", " | "),
    ):
        members = schema.get(key)
        if isinstance(members, list) and members:
            shown = [schema_label(m, depth + 1) for m in members[:MAX_COMBINATION_MEMBERS]]
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
            return f"constant {one_line(scalar(schema['const']))}"
        elif "enum" in schema:
            types = ["enum"]
        elif "not" in schema:
            return f"not {schema_label(schema['not'], depth + 1)}"
        else:
            return "any"
    out = []
    for t in types:
        if t == "array":
            items = schema.get("items")
            out.append(f"array of {schema_label(items, depth + 1)}" if items is not None else "array")
        elif t == "object" and depth == 0 and _is_map(schema):
            out.append(f"map of {schema_label(schema.get('additionalProperties'), depth + 1)}")
        else:
            out.append(t)
    return " or ".join(out)


def _is_map(schema: dict) -> bool:
    extra = schema.get("additionalProperties")
    return isinstance(extra, dict) and bool(extra) and not schema.get("properties")


def attributes(schema: Any, required: bool) -> list[str]:
    """Type, format, nullability, enum values, default ... for one field."""
    attrs = [schema_label(schema)]
    if isinstance(schema, dict):
        if schema.get("format"):
            attrs.append(str(schema["format"]))
        if schema.get("nullable") is True:
            attrs.append("nullable")
        if "enum" in schema and not isinstance(schema.get("$ref"), str):
            enum = enum_text(schema.get("enum"))
            if enum:
                attrs.append(f"one of {enum}")
        if "default" in schema:
            attrs.append(f"default {one_line(value_preview(schema['default'], 60))}")
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
    line = f"{name} ({', '.join(attributes(schema, required))})"
    if isinstance(schema, dict):
        description = one_line(schema.get("description") or schema.get("title"))
        if description:
            line += f": {description}"
        if with_example and "example" in schema:
            line += f" (example: {value_preview(schema['example'], PROPERTY_EXAMPLE_CHARS)})"
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


def required_set(schema: dict) -> set[str]:
    req = schema.get("required")
    return {str(r) for r in req} if isinstance(req, list) else set()


def _property_lines(
    schema: dict, lines: list[str], indent: str, depth: int, max_depth: int, examples: bool
) -> None:
    required = required_set(schema)
    for name, sub in str_keys(schema.get("properties")):
        lines.append(f"{indent}- {_field_line(name, sub, name in required, examples)}")
        child = _inline_object(sub)
        if child is not None and depth < max_depth:
            _property_lines(child, lines, indent + "  ", depth + 1, max_depth, examples)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra and schema.get("properties"):
        lines.append(f"{indent}- (additional properties) ({schema_label(extra)})")


def schema_outline(schema: Any, max_depth: int, examples: bool) -> list[str]:
    """Readable outline of one schema's own structure (refs named, never followed)."""
    lines: list[str] = []
    if not isinstance(schema, dict):
        return lines
    for key, word in (("allOf", "All of"), ("oneOf", "One of"), ("anyOf", "Any of")):
        members = schema.get(key)
        if isinstance(members, list) and members:
            shown = [schema_label(m, 1) for m in members[:MAX_COMBINATION_MEMBERS]]
            if len(members) > MAX_COMBINATION_MEMBERS:
                shown.append(f"… ({len(members) - MAX_COMBINATION_MEMBERS} more)")
            lines.append(f"{word}: {', '.join(shown)}")
            for member in members[:MAX_COMBINATION_MEMBERS]:
                if _inline_object(member) is member:
                    _property_lines(member, lines, "", 0, max_depth, examples)
    if isinstance(schema.get("not"), (dict, bool)):
        lines.append(f"Not: {schema_label(schema['not'], 1)}")
    if isinstance(schema.get("properties"), dict) and schema["properties"]:
        _property_lines(schema, lines, "", 0, max_depth, examples)
    elif _is_map(schema):
        lines.append(f"Values: {schema_label(schema['additionalProperties'], 1)}")
    items = schema.get("items")
    if isinstance(items, dict):
        if "$ref" not in items and isinstance(items.get("properties"), dict):
            lines.append("Items: object with fields:")
            _property_lines(items, lines, "  ", 1, max_depth + 1, examples)
        elif "$ref" not in items and any(k in items for k in ("allOf", "oneOf", "anyOf")):
            lines.append(f"Items: {schema_label(items, 1)}")
    return lines


def body_label(schema: Any) -> str:
    """Label for a response body: a schema name, or an inline shape with its fields."""
    label = schema_label(schema)
    obj = schema if isinstance(schema, dict) and "$ref" not in schema else None
    if obj is not None and isinstance(obj.get("properties"), dict) and obj["properties"]:
        fields = [
            f"{name}: {schema_label(sub, 1)}"
            for name, sub in list(str_keys(obj["properties"]))[:MAX_INLINE_FIELDS]
        ]
        more = len(obj["properties"]) - MAX_INLINE_FIELDS
        if more > 0:
            fields.append(f"… ({more} more)")
        label = f"{label} {{{', '.join(fields)}}}"
    return label
