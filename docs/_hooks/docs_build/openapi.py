"""The API's OpenAPI schema, written at build time, and a page listing its operations.

The schema is the one the application serves at ``/api/v1/schema/``, produced by the same
drf-spectacular generator (``manage.py spectacular``). Generating it loads the settings but never
connects to a database, so the build points ``DATABASE_URL`` at an address nothing listens on and
keeps the embedded server (and the checkout's ``var/``) out of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]  # docs/_hooks/docs_build/ -> the repository
SCHEMA_FILE = "api/openapi.yaml"
ENDPOINTS_PAGE = "api/endpoints.md"
METHODS = ("get", "post", "put", "patch", "delete")


def openapi_schema(root: Path = ROOT) -> str:
    """The schema as YAML; a generator warning fails the build (``--fail-on-warn``)."""
    with tempfile.TemporaryDirectory(prefix="docs-openapi-") as scratch:
        target = Path(scratch) / "openapi.yaml"
        environment = {
            **os.environ,
            "DATABASE_URL": "postgres://docs@127.0.0.1:9/unused",
            "KNOWLEDGE_DATA_DIR": scratch,
        }
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "spectacular",
                "--file",
                str(target),
                "--validate",
                "--fail-on-warn",
            ],
            cwd=root,
            env=environment,
            check=True,
            capture_output=True,
            text=True,
        )
        return target.read_text()


def endpoints_page(schema_text: str) -> str:
    schema = yaml.safe_load(schema_text)
    info = schema.get("info", {})
    lines = [
        "# Endpoints",
        "",
        "Generated at build time from the schema the application serves at `/api/v1/schema/` "
        f"(OpenAPI {schema.get('openapi')}, {info.get('title')} version {info.get('version')}). "
        "Download it: [openapi.yaml](openapi.yaml). A running server also serves it browsable, with "
        "Swagger UI, at `/api/v1/docs/`.",
        "",
        "| method | path | what it does |",
        "|---|---|---|",
    ]
    for path, operations in sorted(schema.get("paths", {}).items()):
        for method in METHODS:
            operation = operations.get(method)
            if operation is not None:
                lines.append(f"| {method.upper()} | `{path}` | {_summary(operation)} |")
    return "\n".join(lines) + "\n"


def _summary(operation: dict) -> str:
    text = operation.get("summary") or operation.get("description") or operation.get("operationId", "")
    first_line = text.strip().splitlines()[0] if text.strip() else ""
    return first_line.replace("|", "\\|")
