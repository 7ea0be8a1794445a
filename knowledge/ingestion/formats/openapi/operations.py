"""One section's text per operation: parameters, request body, responses, security."""

from __future__ import annotations

from typing import Any

from knowledge.ingestion.formats.openapi.schemas import (
    attributes,
    body_label,
    required_set,
    schema_label,
    schema_outline,
)
from knowledge.ingestion.formats.openapi.spec import Spec
from knowledge.ingestion.formats.openapi.text import (
    OPERATION_PROPERTY_DEPTH,
    normalize_block,
    one_line,
    str_keys,
)


def _param_key(spec: Spec, param: Any) -> tuple[str, str] | None:
    target, _ = spec.deref(param)
    if isinstance(target, dict) and target.get("name") is not None:
        return str(target.get("name")), str(target.get("in", ""))
    return None


def merged_parameters(spec: Spec, path_params: Any, op_params: Any) -> list[Any]:
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
        for _, media in str_keys(content):
            if isinstance(media, dict) and "schema" in media:
                return media["schema"]
    if swagger2 or "type" in param:
        return {k: v for k, v in param.items() if k in ("type", "format", "items", "enum", "default")}
    return None


def param_line(spec: Spec, param: dict) -> str:
    target, ref_name = spec.deref(param)
    if not target:
        return f"- {ref_name or 'parameter'} (see parameter {ref_name})"
    name = str(target.get("name", ref_name or "?"))
    attrs = [str(target.get("in", "?"))]
    schema = _param_schema(target, spec.swagger2)
    type_attrs = attributes(schema, False) if schema is not None else []
    if type_attrs and type_attrs[0] == "any" and schema in (None, {}):
        type_attrs = type_attrs[1:]
    attrs.extend(type_attrs)
    if target.get("required") is True:
        attrs.append("required")
    if target.get("deprecated") is True and "deprecated" not in attrs:
        attrs.append("deprecated")
    line = f"- {name} ({', '.join(attrs)})"
    description = one_line(target.get("description"))
    if description:
        line += f": {description}"
    if ref_name and ref_name != name:
        line += f" [parameter {ref_name}]"
    return line


def content_part(spec: Spec, content: Any, max_depth: int) -> list[str]:
    """Media types with each schema named and outlined (refs resolved one level).

    Media types whose schemas render identically are listed together once.
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    for media_type, media in str_keys(content):
        schema = media.get("schema") if isinstance(media, dict) else None
        groups.setdefault(tuple(_schema_lines(spec, schema, max_depth)), []).append(media_type)
    lines: list[str] = []
    for rendered, types in groups.items():
        label, *rest = rendered
        lines.append(f"Schema ({', '.join(types)}): {label}")
        lines.extend(rest)
    return lines


def _schema_lines(spec: Spec, schema: Any, max_depth: int) -> list[str]:
    """[label, description/required/outline lines...] for a body schema."""
    lines = [schema_label(schema) if schema is not None else "not specified"]
    if schema is None:
        return lines
    target, ref_name = spec.deref(schema)
    if not isinstance(target, dict) or (ref_name and "$ref" in target):
        return lines  # a missing ref, or a ref to a ref: name only
    if ref_name:
        description = one_line(target.get("description") or target.get("title"))
        if description and description != ref_name:
            lines.append(f"{ref_name}: {description}")
    required = sorted(required_set(target))
    if required:
        lines.append(f"Required fields: {', '.join(required)}")
    lines.extend(schema_outline(target, max_depth, examples=False))
    return lines


def _body_head(target: dict, ref_name: str | None, kind: str) -> str:
    """``Request body (required) [KIND NAME]:``, the first line of both kinds of request body."""
    head = "Request body"
    if target.get("required") is True:
        head += " (required)"
    if ref_name:
        head += f" [{kind} {ref_name}]"
    return head + ":"


def _request_body_part(spec: Spec, body: Any) -> str:
    target, ref_name = spec.deref(body)
    if not isinstance(target, dict):
        return ""
    lines = [_body_head(target, ref_name, "request body")]
    description = one_line(target.get("description"))
    if description:
        lines.append(description)
    content = target.get("content")
    if isinstance(content, dict) and content:
        lines.append(f"Content types: {', '.join(k for k, _ in str_keys(content))}")
        if ref_name:  # a referenced body: name its schemas, do not outline a second level
            for media_type, media in str_keys(content):
                schema = media.get("schema") if isinstance(media, dict) else None
                lines.append(f"Schema ({media_type}): {schema_label(schema)}")
        else:
            lines.extend(content_part(spec, content, OPERATION_PROPERTY_DEPTH))
    return "\n".join(lines)


def _swagger2_body_part(spec: Spec, body_param: dict, consumes: Any) -> str:
    target, ref_name = spec.deref(body_param)
    if not isinstance(target, dict):
        return ""
    lines = [_body_head(target, ref_name, "parameter")]
    if target.get("name"):
        lines.append(f"Body parameter: {target['name']}")
    description = one_line(target.get("description"))
    if description:
        lines.append(description)
    types = [str(c) for c in consumes] if isinstance(consumes, list) and consumes else []
    if types:
        lines.append(f"Content types: {', '.join(types)}")
    content = {", ".join(types) or "body": {"schema": target.get("schema")}}
    lines.extend(content_part(spec, content, OPERATION_PROPERTY_DEPTH))
    return "\n".join(lines)


def _response_line(spec: Spec, status: str, response: Any) -> str:
    target, ref_name = spec.deref(response)
    parts: list[str] = []
    description = one_line(target.get("description")) if isinstance(target, dict) else ""
    parts.append(description or (ref_name or "no description"))
    bodies: list[tuple[str, Any]] = []
    if isinstance(target, dict):
        if isinstance(target.get("content"), dict):
            bodies = [
                (mt, media.get("schema"))
                for mt, media in str_keys(target["content"])
                if isinstance(media, dict) and "schema" in media
            ]
        elif "schema" in target:
            bodies = [("", target["schema"])]
    if bodies:
        labels: dict[str, list[str]] = {}
        for media_type, schema in bodies:
            labels.setdefault(body_label(schema), []).append(media_type)
        if len(labels) == 1:
            parts.append(f"body: {next(iter(labels))}")
        else:
            parts.append("body: " + "; ".join(f"{', '.join(t)}: {lab}" for lab, t in labels.items()))
    if isinstance(target, dict) and isinstance(target.get("headers"), dict) and target["headers"]:
        parts.append(f"headers: {', '.join(k for k, _ in str_keys(target['headers']))}")
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
        for name, scopes in str_keys(requirement):
            if isinstance(scopes, list) and scopes:
                names.append(f"{name} (scopes: {', '.join(str(s) for s in scopes)})")
            else:
                names.append(name)
        options.append(" and ".join(names))
    return f"Security: {' or '.join(options)}" if options else ""


def operation_text(spec: Spec, method: str, path: str, op: dict, params: list[Any]) -> str:
    """The text of one operation: its line, facts and description, parameters, bodies, responses,
    security and callbacks, in that order."""
    upper = method.upper()
    summary = one_line(op.get("summary"))
    parts = [f"{upper} {path} — {summary}" if summary else f"{upper} {path}"]
    meta_lines = _meta_lines(op)
    if meta_lines:
        parts.append("\n".join(meta_lines))
    description = normalize_block(op.get("description"))
    if description:
        parts.append(description)
    if op.get("deprecated") is True:
        parts.append("Deprecated: this operation is deprecated.")
    parts.extend(_parameter_and_body_parts(spec, op, params))
    responses = _responses_part(spec, op)
    if responses:
        parts.append(responses)
    security_text = _security_text(op.get("security", spec.root.get("security")))
    if security_text:
        parts.append(security_text)
    callbacks = op.get("callbacks")
    if isinstance(callbacks, dict) and callbacks:
        names = []
        for name, cb in str_keys(callbacks):
            _, ref_name = spec.deref(cb)
            names.append(f"{name} [callback {ref_name}]" if ref_name else name)
        parts.append(f"Callbacks: {', '.join(names)}")
    return "\n\n".join(parts)


def _meta_lines(op: dict) -> list[str]:
    meta_lines = []
    if op.get("operationId") is not None:
        meta_lines.append(f"Operation ID: {op['operationId']}")
    tags = [str(t) for t in op.get("tags") or [] if t is not None] if isinstance(op.get("tags"), list) else []
    if tags:
        meta_lines.append(f"Tags: {', '.join(tags)}")
    docs = op.get("externalDocs")
    if isinstance(docs, dict) and docs.get("url"):
        meta_lines.append(f"Documentation: {docs['url']}")
    return meta_lines


def _parameter_and_body_parts(spec: Spec, op: dict, params: list[Any]) -> list[str]:
    """The parameters, then the request body (OpenAPI 3) or the body parameters (Swagger 2)."""
    parts = []
    body_params = []
    shown = []
    for param in params:
        target, _ = spec.deref(param)
        if spec.swagger2 and isinstance(target, dict) and target.get("in") == "body":
            body_params.append(param)
        else:
            shown.append(param)
    if shown:
        parts.append("\n".join(["Parameters:"] + [param_line(spec, p) for p in shown]))
    if "requestBody" in op:
        body = _request_body_part(spec, op["requestBody"])
        if body:
            parts.append(body)
    consumes = op.get("consumes", spec.root.get("consumes"))
    for param in body_params:
        body = _swagger2_body_part(spec, param, consumes)
        if body:
            parts.append(body)
    return parts


def _responses_part(spec: Spec, op: dict) -> str:
    responses = op.get("responses")
    if not isinstance(responses, dict) or not responses:
        return ""
    lines = ["Responses:"]
    for status, response in str_keys(responses):
        if status.startswith("x-"):
            continue
        lines.append(_response_line(spec, status, response))
    produces = op.get("produces", spec.root.get("produces"))
    if spec.swagger2 and isinstance(produces, list) and produces:
        lines.append(f"Produces: {', '.join(str(p) for p in produces)}")
    return "\n".join(lines)
