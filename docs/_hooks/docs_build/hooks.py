"""MkDocs hook (``hooks:`` in mkdocs.yml): adds the pages generated from the code to every build.

Generated in memory, never checked in, so no stale copy can exist: the configuration reference, the
API's OpenAPI schema and its list of operations. A failure to generate them fails the build.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HOOKS = Path(__file__).resolve().parents[1]  # docs/_hooks: the docs_build package's parent
for path in (ROOT, HOOKS):  # MkDocs loads this file by path, not as part of a package
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from mkdocs.structure.files import File  # noqa: E402

from docs_build import openapi, reference  # noqa: E402


def on_files(files, config):
    schema = openapi.openapi_schema(ROOT)
    generated = {
        reference.PAGE: reference.configuration_page(ROOT),
        openapi.SCHEMA_FILE: schema,
        openapi.ENDPOINTS_PAGE: openapi.endpoints_page(schema),
    }
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    return files
