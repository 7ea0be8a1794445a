"""The per-document ingestion limits as values: their fields, defaults and environment variables.

Declared here, below both apps, so ``config/settings.py`` can read them from the environment without
importing ``knowledge``; what each limit guards against, and the checks that apply them, are in
``knowledge/ingestion/limits.py`` (which re-exports these names).
"""

from __future__ import annotations

from dataclasses import dataclass

from config.base.env import env_int

MIB = 1024 * 1024


@dataclass(frozen=True)
class IngestLimits:
    """Per-document limits; each field has the environment variable named in ``SETTINGS``."""

    max_uncompressed_bytes: int = 200 * MIB
    max_compression_ratio: int = 100
    max_zip_members: int = 20_000
    max_text_chars: int = 10_000_000
    max_sections: int = 10_000
    max_chunks: int = 10_000
    max_pdf_pages: int = 2_000
    max_html_elements: int = 100_000
    max_nesting_depth: int = 64
    max_yaml_alias_expansion: int = 1_000_000
    max_pdf_page_content_bytes: int = 8 * MIB
    max_pdf_content_bytes: int = 256 * MIB
    max_page_cpu_seconds: int = 30
    max_extraction_cpu_seconds: int = 900
    max_extraction_memory_bytes: int = 2048 * MIB
    max_docx_paragraphs: int = 100_000
    max_office_xml_elements: int = 2_000_000
    max_openapi_nodes: int = 1_000_000
    # OCR (knowledge.ingestion.ocr): pages read by OCR per document, and pixels per image or page drawn.
    max_ocr_pages: int = 200
    max_image_pixels: int = 60_000_000


# Field -> environment variable, for settings and for the messages users see.
SETTINGS = {
    "max_uncompressed_bytes": "KNOWLEDGE_MAX_UNCOMPRESSED_MB",
    "max_compression_ratio": "KNOWLEDGE_MAX_COMPRESSION_RATIO",
    "max_zip_members": "KNOWLEDGE_MAX_ZIP_MEMBERS",
    "max_text_chars": "KNOWLEDGE_MAX_TEXT_CHARS",
    "max_sections": "KNOWLEDGE_MAX_SECTIONS",
    "max_chunks": "KNOWLEDGE_MAX_CHUNKS",
    "max_pdf_pages": "KNOWLEDGE_MAX_PDF_PAGES",
    "max_html_elements": "KNOWLEDGE_MAX_HTML_ELEMENTS",
    "max_nesting_depth": "KNOWLEDGE_MAX_NESTING_DEPTH",
    "max_yaml_alias_expansion": "KNOWLEDGE_MAX_YAML_ALIAS_EXPANSION",
    "max_pdf_page_content_bytes": "KNOWLEDGE_MAX_PDF_PAGE_CONTENT_MB",
    "max_pdf_content_bytes": "KNOWLEDGE_MAX_PDF_CONTENT_MB",
    "max_page_cpu_seconds": "KNOWLEDGE_MAX_PAGE_CPU_SECONDS",
    "max_extraction_cpu_seconds": "KNOWLEDGE_MAX_EXTRACTION_CPU_SECONDS",
    "max_extraction_memory_bytes": "KNOWLEDGE_MAX_EXTRACTION_MEMORY_MB",
    "max_docx_paragraphs": "KNOWLEDGE_MAX_DOCX_PARAGRAPHS",
    "max_office_xml_elements": "KNOWLEDGE_MAX_OFFICE_XML_ELEMENTS",
    "max_openapi_nodes": "KNOWLEDGE_MAX_OPENAPI_NODES",
    "max_ocr_pages": "KNOWLEDGE_MAX_OCR_PAGES",
    "max_image_pixels": "KNOWLEDGE_MAX_IMAGE_PIXELS",
}

# Fields whose setting is in megabytes (the field itself is in bytes).
MEGABYTE_FIELDS = frozenset(
    {
        "max_uncompressed_bytes",
        "max_pdf_page_content_bytes",
        "max_pdf_content_bytes",
        "max_extraction_memory_bytes",
    }
)

DEFAULT_LIMITS = IngestLimits()


def ingest_limits_from_env() -> IngestLimits:
    """The limits as the environment sets them, defaults above; sizes are set in megabytes, kept in bytes."""
    values = {}
    for field, name in SETTINGS.items():
        scale = MIB if field in MEGABYTE_FIELDS else 1
        values[field] = env_int(name, getattr(DEFAULT_LIMITS, field) // scale, minimum=1) * scale
    return IngestLimits(**values)
