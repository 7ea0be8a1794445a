"""What a release records about the code that made its chunks (docs/design.md#releases)."""

from __future__ import annotations

from functools import cache
from importlib import metadata

# Raise when a reader or chunker changes what it produces from the same file, so a release built
# before says so (`knowledge_release status` shows both).
EXTRACTION_VERSION = "2026.11.29"

# The libraries whose versions change what a document reads as.
PARSER_LIBRARIES = ("pypdf", "python-docx", "python-pptx", "openpyxl", "pdfplumber", "beautifulsoup4")


@cache
def parser_version() -> str:
    """``pypdf 6.1.0; python-docx 1.2.0; ...`` for the readers installed here."""
    found = []
    for name in PARSER_LIBRARIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue  # a reader this installation does not have reads nothing
    return "; ".join(found)


@cache
def product_version() -> str:
    return metadata.version("knowledge")
