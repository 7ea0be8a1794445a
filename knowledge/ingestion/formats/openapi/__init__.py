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

from knowledge.ingestion.formats.openapi.components import component_text
from knowledge.ingestion.formats.openapi.operations import merged_parameters, operation_text
from knowledge.ingestion.formats.openapi.spec import HTTP_METHODS, Spec, collect_refs, document_parse
from knowledge.ingestion.formats.openapi.text import str_keys
from knowledge.ingestion.limits import DEFAULT_LIMITS, IngestLimits, TextBudget
from knowledge.ingestion.types import Section, UnreadableDocument

# One section before its references are resolved: (element_id, source_ref, text, heading_path,
# metadata, the raw $ref strings it uses).
Draft = tuple[str, str, str, tuple[str, ...], dict, list[str]]


def extract_openapi(filename: str, data: bytes, *, limits: IngestLimits = DEFAULT_LIMITS) -> list[Section]:
    """Sections for every operation and component of an OpenAPI/Swagger document.

    Accepts OpenAPI 3.0/3.1 and Swagger 2.0, JSON or YAML. Raises
    ``UnreadableDocument`` for unparsable input (with the parser's line and column)
    and for documents that are not OpenAPI/Swagger specs.
    """
    root = document_parse(filename, data, limits)
    if not isinstance(root, dict):
        raise UnreadableDocument(f"{filename}: not an OpenAPI document (the top level is not a mapping)")
    if "openapi" not in root and "swagger" not in root:
        raise UnreadableDocument(
            f"{filename}: not an OpenAPI document (no 'openapi' or 'swagger' version key)"
        )
    spec = Spec(filename, root)
    drafts = _operation_drafts(spec, filename, root) + _component_drafts(spec)
    return _linked_sections(spec, drafts)


def _operation_drafts(spec: Spec, filename: str, root: dict) -> list[Draft]:
    drafts: list[Draft] = []
    for path, item in str_keys(root.get("paths")):
        if path.startswith("x-") or not isinstance(item, dict):
            continue
        item_refs: list[str] = []
        if isinstance(item.get("$ref"), str):
            item_refs.append(item["$ref"])
            target = spec.resolve(item["$ref"])
            if isinstance(target, dict):
                item = {**target, **{k: v for k, v in item.items() if k != "$ref"}}
        for key, op in item.items():
            method = str(key).lower()
            if method in HTTP_METHODS and isinstance(op, dict):
                drafts.append(_operation_draft(spec, filename, path, method, op, item, item_refs))
    return drafts


def _operation_draft(
    spec: Spec, filename: str, path: str, method: str, op: dict, item: dict, item_refs
) -> Draft:
    params = merged_parameters(spec, item.get("parameters"), op.get("parameters"))
    op_ids = {id(p) for p in op.get("parameters") or []} if isinstance(op.get("parameters"), list) else set()
    inherited = [p for p in params if id(p) not in op_ids]
    refs = item_refs + collect_refs([op, inherited])
    tags = [str(t) for t in op.get("tags") or [] if t is not None] if isinstance(op.get("tags"), list) else []
    upper = method.upper()
    metadata = {
        "type": "operation",
        "method": upper,
        "path": path,
        "operation_id": (str(op["operationId"]) if op.get("operationId") is not None else None),
        "tags": tags,
    }
    return (
        f"{filename}:paths/{path.lstrip('/')}/{method}",
        f"operation={upper} {path}",
        operation_text(spec, method, path, op, params),
        (tags[0] if tags else "Operations", f"{upper} {path}"),
        metadata,
        refs,
    )


def _component_drafts(spec: Spec) -> list[Draft]:
    return [
        (
            element_id,
            f"component={ctype}/{name}",
            component_text(spec, ctype, name, node),
            ("Components", ctype, name),
            {"type": "component", "component_type": ctype, "name": name},
            collect_refs([node]),
        )
        for element_id, (ctype, name, node) in spec.components.items()
    ]


def _linked_sections(spec: Spec, drafts: list[Draft]) -> list[Section]:
    """Sections with the component ids each references and the ids of the sections referencing it."""
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


def extract_openapi_sections(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """``extract_openapi`` as the format registry calls it: the sections, charged to ``budget``."""
    sections = extract_openapi(filename, data, limits=budget.limits)
    budget.add_section(len(sections))
    for section in sections:
        budget.charge(section.text)
    return sections
