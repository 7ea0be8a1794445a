"""One section's text per component, rendered by its kind (schemas, parameters, responses...)."""

from __future__ import annotations

from typing import Any

from knowledge.ingestion.formats.openapi.operations import content_part, param_line
from knowledge.ingestion.formats.openapi.schemas import attributes, body_label, schema_label, schema_outline
from knowledge.ingestion.formats.openapi.spec import HTTP_METHODS, Spec
from knowledge.ingestion.formats.openapi.text import (
    COMPONENT_PROPERTY_DEPTH,
    EXAMPLE_VALUE_CHARS,
    OPERATION_PROPERTY_DEPTH,
    SCHEMA_EXAMPLE_CHARS,
    enum_text,
    normalize_block,
    one_line,
    ref_display_name,
    scalar,
    str_keys,
    value_preview,
)

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
        parts.append(f"Type: {schema_label(schema)}")
        return parts
    if isinstance(schema.get("$ref"), str):
        parts.append(f"Alias of: {ref_display_name(schema['$ref'])}")
    title = one_line(schema.get("title"))
    if title and title != name:
        parts.append(f"Title: {title}")
    description = normalize_block(schema.get("description"))
    if description:
        parts.append(description)
    facts = []
    label = schema_label(schema)
    if "$ref" not in schema and not label.startswith(("all of", "one of", "any of")):
        facts.append(f"Type: {label}")
    if schema.get("format"):
        facts.append(f"Format: {schema['format']}")
    if schema.get("nullable") is True:
        facts.append("Nullable: yes")
    if "enum" in schema:
        enum = enum_text(schema.get("enum"))
        if enum:
            facts.append(f"Allowed values: {enum}")
    if "default" in schema:
        facts.append(f"Default: {value_preview(schema['default'], 100)}")
    if schema.get("deprecated") is True:
        facts.append("Deprecated: yes")
    required = (
        [str(r) for r in schema.get("required") or []] if isinstance(schema.get("required"), list) else []
    )
    if required:
        facts.append(f"Required: {', '.join(required)}")
    if facts:
        parts.append("\n".join(facts))
    outline = schema_outline(schema, COMPONENT_PROPERTY_DEPTH, examples=True)
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
                f"{k} → {ref_display_name(str(v)) if '/' in str(v) else v}" for k, v in str_keys(mapping)
            )
        parts.append(text)
    elif isinstance(discriminator, str):
        parts.append(f"Discriminator: {discriminator}")
    if "example" in schema:
        parts.append(f"Example: {value_preview(schema['example'], SCHEMA_EXAMPLE_CHARS)}")
    elif isinstance(schema.get("examples"), list) and schema["examples"]:
        parts.append(f"Example: {value_preview(schema['examples'][0], SCHEMA_EXAMPLE_CHARS)}")
    return parts


def component_text(spec: Spec, ctype: str, name: str, node: Any) -> str:
    """The text of one component: its title, alias, summary and description, then what its kind has."""
    if ctype == "schemas":
        return "\n\n".join(_schema_component_text(name, node))
    parts = [f"{_TYPE_TITLES.get(ctype, ctype)} {name}"]
    if not isinstance(node, dict):
        parts.append(value_preview(node, 200))
        return "\n\n".join(parts)
    if isinstance(node.get("$ref"), str):
        parts.append(f"Alias of: {ref_display_name(node['$ref'])}")
    summary = one_line(node.get("summary"))
    if summary:
        parts.append(summary)
    if ctype == "parameters":  # its description goes with its line, not before
        return "\n\n".join(parts + _parameter_parts(spec, node))
    description = normalize_block(node.get("description"))
    if description:
        parts.append(description)
    renderer = _RENDERERS.get(ctype)
    if renderer is not None:
        parts.extend(renderer(spec, ctype, node))
    return "\n\n".join(parts)


def _parameter_parts(spec: Spec, node: dict) -> list[str]:
    parts = []
    line = param_line(spec, node)
    description = normalize_block(node.get("description"))
    if description and "\n" in description:
        parts.append(line.split(": ", 1)[0].lstrip("- "))
        parts.append(description)
    else:
        parts.append(line.lstrip("- "))
    if node.get("in") == "body" and node.get("schema") is not None:
        parts.append(f"Body schema: {schema_label(node['schema'])}")
    if "example" in node:
        parts.append(f"Example: {value_preview(node['example'], SCHEMA_EXAMPLE_CHARS)}")
    return parts


def _example_parts(spec: Spec, ctype: str, node: dict) -> list[str]:
    parts = []
    if "value" in node:
        parts.append(f"Value: {value_preview(node['value'], EXAMPLE_VALUE_CHARS)}")
    if node.get("externalValue"):
        parts.append(f"External value: {node['externalValue']}")
    return parts


def _body_parts(spec: Spec, ctype: str, node: dict) -> list[str]:
    """Responses and request bodies: required, content types and schemas, headers."""
    parts = []
    if node.get("required") is True:
        parts.append("Required: yes")
    content = node.get("content")
    if isinstance(content, dict) and content:
        lines = [f"Content types: {', '.join(k for k, _ in str_keys(content))}"]
        lines.extend(content_part(spec, content, OPERATION_PROPERTY_DEPTH))
        parts.append("\n".join(lines))
    elif "schema" in node:  # Swagger 2 response
        parts.append(f"Body: {body_label(node['schema'])}")
    headers = node.get("headers")
    if isinstance(headers, dict) and headers:
        parts.append("\n".join(["Headers:"] + [_header_line(spec, n, h) for n, h in str_keys(headers)]))
    return parts


def _header_line(spec: Spec, header_name: str, header: Any) -> str:
    target, ref_name = spec.deref(header)
    schema = target.get("schema", target) if isinstance(target, dict) else None
    line = f"- {header_name} ({schema_label(schema)})"
    desc = one_line(target.get("description")) if isinstance(target, dict) else ""
    if desc:
        line += f": {desc}"
    if ref_name:
        line += f" [header {ref_name}]"
    return line


def _header_parts(spec: Spec, ctype: str, node: dict) -> list[str]:
    schema = node.get("schema", node)
    facts = [f"Type: {', '.join(attributes(schema, node.get('required') is True))}"]
    if "example" in node:
        facts.append(f"Example: {value_preview(node['example'], SCHEMA_EXAMPLE_CHARS)}")
    return ["\n".join(facts)]


_SECURITY_FACTS = (
    ("type", "Type"),
    ("scheme", "Scheme"),
    ("bearerFormat", "Bearer format"),
    ("in", "In"),
    ("name", "Name"),
    ("flow", "Flow"),
    ("authorizationUrl", "Authorization URL"),
    ("tokenUrl", "Token URL"),
    ("openIdConnectUrl", "OpenID Connect URL"),
)


def _security_parts(spec: Spec, ctype: str, node: dict) -> list[str]:
    parts = []
    facts = [f"{word}: {node[key]}" for key, word in _SECURITY_FACTS if node.get(key)]
    if facts:
        parts.append("\n".join(facts))
    flows = node.get("flows")
    if isinstance(flows, dict):
        for flow_name, flow in str_keys(flows):
            if not isinstance(flow, dict):
                continue
            lines = [f"Flow {flow_name}:"]
            lines.extend(
                f"{key}: {flow[key]}"
                for key in ("authorizationUrl", "tokenUrl", "refreshUrl")
                if flow.get(key)
            )
            lines.extend(_scope_lines(flow.get("scopes")))
            parts.append("\n".join(lines))
    scope_lines = _scope_lines(node.get("scopes"))
    if scope_lines:
        parts.append("\n".join(scope_lines))
    return parts


def _link_parts(spec: Spec, ctype: str, node: dict) -> list[str]:
    facts = []
    if node.get("operationId"):
        facts.append(f"Operation ID: {node['operationId']}")
    if node.get("operationRef"):
        facts.append(f"Operation: {node['operationRef']}")
    for pname, expr in str_keys(node.get("parameters")):
        facts.append(f"Parameter {pname} = {one_line(scalar(expr))}")
    if "requestBody" in node:
        facts.append(f"Request body: {value_preview(node['requestBody'], 200)}")
    return ["\n".join(facts)] if facts else []


def _path_item_parts(spec: Spec, ctype: str, node: dict) -> list[str]:
    """Callbacks (keyed by expression) and 3.1 path items: one line per operation."""
    items = {"": node} if ctype == "pathItems" else dict(str_keys(node))
    lines = []
    for expression, path_item in items.items():
        target, _ = spec.deref(path_item)
        if not isinstance(target, dict):
            continue
        for method, op in str_keys(target):
            if method.lower() in HTTP_METHODS and isinstance(op, dict):
                text = f"- {method.upper()} {expression}".rstrip()
                summary = one_line(op.get("summary") or op.get("description"))
                if summary:
                    text += f": {summary}"
                lines.append(text)
    return ["\n".join(["Operations:"] + lines)] if lines else []


_RENDERERS = {
    "examples": _example_parts,
    "responses": _body_parts,
    "requestBodies": _body_parts,
    "headers": _header_parts,
    "securitySchemes": _security_parts,
    "links": _link_parts,
    "callbacks": _path_item_parts,
    "pathItems": _path_item_parts,
}


def _scope_lines(scopes: Any) -> list[str]:
    if not isinstance(scopes, dict) or not scopes:
        return []
    return ["Scopes:"] + [f"- {s}: {one_line(d)}" for s, d in str_keys(scopes)]
