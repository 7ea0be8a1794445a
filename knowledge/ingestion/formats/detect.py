"""Which format a file is, trusting its content over its extension."""

from __future__ import annotations

import json
import zipfile
from pathlib import PurePath

from knowledge.ingestion.formats.common import UTF16_BOMS, decode_text, strip_bom
from knowledge.ingestion.formats.image import image_kind, image_size_check
from knowledge.ingestion.limits import DEFAULT_LIMITS, IngestLimits, zip_members_checked
from knowledge.ingestion.structure_scan import json_scan_bounded, yaml_scan_bounded
from knowledge.ingestion.types import UnreadableDocument, UnsupportedFormat

FORMATS = ("pdf", "docx", "pptx", "xlsx", "csv", "html", "markdown", "text", "openapi", "image")

SUPPORTED_DESCRIPTION = (
    "PDF (.pdf), Word (.docx), PowerPoint (.pptx), Excel (.xlsx), CSV (.csv, .tsv), "
    "HTML (.html, .htm), Markdown (.md, .markdown), plain text (.txt, .rst), "
    "OpenAPI 3.x / Swagger 2 (.json, .yaml, .yml) and images read by OCR (.png, .jpg, .tif, .webp)"
)


_EXTENSION_FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".csv": "csv",
    ".tsv": "csv",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    "": "text",
    ".json": "openapi",
    ".yaml": "openapi",
    ".yml": "openapi",
}
_ZIP_MARKERS = (("word/", "docx"), ("ppt/", "pptx"), ("xl/", "xlsx"))
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def detect_format(filename: str, data: bytes, *, limits: IngestLimits = DEFAULT_LIMITS) -> str:
    """Name the format of ``data``, trusting content over the extension.

    Content wins where it is unambiguous (``%PDF`` magic, the part names
    inside an Office zip, an HTML doctype in a ``.txt``) because uploads are
    often misnamed; the extension decides between the text formats and tells
    which extractor should report a damaged binary file. JSON/YAML files are
    parsed here so a non-OpenAPI or malformed one is rejected before any work,
    and an Office zip whose directory announces a zip bomb is refused before
    any of its parts is read (``limits``).
    """
    if not strip_bom(data).strip(b" \t\r\n\f\v\x00"):
        raise UnreadableDocument("the file is empty")
    ext = PurePath(filename).suffix.lower()
    hinted = _EXTENSION_FORMATS.get(ext)

    if b"%PDF-" in data[:1024]:
        return "pdf"
    if image_kind(data):
        image_size_check(filename, data, limits)
        return "image"
    if data.startswith(b"PK\x03\x04"):
        return _detect_zip(filename, data, hinted, limits)
    if data.startswith(_OLE_MAGIC):
        raise UnsupportedFormat(
            f"unsupported file type: {filename} is a legacy Office file (.doc/.xls/.ppt); "
            f"save it as .docx/.xlsx/.pptx. Supported: {SUPPORTED_DESCRIPTION}"
        )
    if hinted in ("pdf", "docx", "pptx", "xlsx"):
        return hinted  # damaged or misnamed: the extractor says what is wrong
    if _looks_binary(data) or hinted is None:
        raise UnsupportedFormat(
            f"unsupported file type {ext or '(no extension)'} ({filename}); "
            f"supported: {SUPPORTED_DESCRIPTION}"
        )
    if hinted == "openapi":
        _check_openapi(filename, ext, data, limits)
        return "openapi"
    if hinted in ("text", "markdown") and _looks_like_html(data):
        return "html"
    return hinted


def _detect_zip(filename: str, data: bytes, hinted: str | None, limits: IngestLimits) -> str:
    """Tell DOCX/PPTX/XLSX apart by the part folders inside the zip (after the zip-bomb checks)."""
    try:
        names = zip_members_checked(data, limits)
    except (zipfile.BadZipFile, ValueError, OSError):
        if hinted in ("docx", "pptx", "xlsx"):
            return hinted  # the extractor reports the damaged container
        names = []
    for prefix, fmt in _ZIP_MARKERS:
        if any(name.startswith(prefix) for name in names):
            return fmt
    raise UnsupportedFormat(
        f"unsupported file type: {filename} is a zip archive that is not a DOCX, PPTX "
        f"or XLSX document; supported: {SUPPORTED_DESCRIPTION}"
    )


def _looks_binary(data: bytes) -> bool:
    """NUL bytes never occur in UTF-8/Latin-1 text, only in binary (or UTF-16)."""
    return not data.startswith(UTF16_BOMS) and b"\x00" in data[:8192]


def _looks_like_html(data: bytes) -> bool:
    """Saved web pages are often uploaded as .txt; read them as HTML."""
    head = strip_bom(data)[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _check_openapi(filename: str, ext: str, data: bytes, limits: IngestLimits) -> None:
    """Scan JSON/YAML within the node, nesting and alias limits; require ``openapi: 3.x`` or ``swagger: 2.0``.

    The file is read as a stream of tokens or parser events, never loaded: this runs in the web
    process, where loading a hostile file would cost gigabytes (``knowledge.ingestion.structure_scan``).
    """
    kind = "JSON" if ext == ".json" else "YAML"
    text = decode_text(data)
    if kind == "JSON":
        try:
            top_level = json_scan_bounded(text, limits, _VERSION_KEYS)
        except json.JSONDecodeError as exc:
            raise UnreadableDocument(
                f"{filename} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from exc
    else:
        import yaml

        try:
            top_level = yaml_scan_bounded(text, limits, _VERSION_KEYS)
        except yaml.YAMLError as exc:
            raise UnreadableDocument(f"{filename} is not valid YAML: {_yaml_error(exc)}") from exc
    if not _is_openapi(top_level):
        raise UnreadableDocument(f"{filename} is {kind} but not an OpenAPI 3.x or Swagger 2 document")


_VERSION_KEYS = frozenset({"openapi", "swagger"})


def _is_openapi(top_level: dict | None) -> bool:
    """YAML may load ``openapi: 3.0`` as a float, so compare the text form."""
    if top_level is None:
        return False
    openapi, swagger = top_level.get("openapi"), top_level.get("swagger")
    return (openapi is not None and str(openapi).startswith("3.")) or (
        swagger is not None and str(swagger) == "2.0"
    )


def _yaml_error(exc: Exception) -> str:
    """PyYAML marks are 0-based; users count lines from 1."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return problem
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
