"""One module per document format, and the registry that maps a detected format to its extractor.

Each extractor takes (filename, bytes, TextBudget) and returns (or yields) Sections with one
strict ``source_ref`` each; knowledge.ingestion.extract picks one through
``EXTRACTORS`` after ``detect_format``. Everything here is pure (no Django, no
database). A file in a format we do not read raises ``UnsupportedFormat``; a
readable format whose file is empty, encrypted or damaged raises
``UnreadableDocument``. Both messages are shown to the user as-is.
"""

from __future__ import annotations

from knowledge.ingestion.formats.html import extract_html
from knowledge.ingestion.formats.image import extract_image
from knowledge.ingestion.formats.markdown import extract_markdown
from knowledge.ingestion.formats.openapi import extract_openapi_sections
from knowledge.ingestion.formats.pdf import extract_pdf
from knowledge.ingestion.formats.plaintext import extract_text
from knowledge.ingestion.formats.sheets import extract_csv, extract_xlsx
from knowledge.ingestion.formats.slides import extract_pptx
from knowledge.ingestion.formats.word import extract_docx

EXTRACTORS = {
    "pdf": extract_pdf,
    "docx": extract_docx,
    "pptx": extract_pptx,
    "xlsx": extract_xlsx,
    "csv": extract_csv,
    "html": extract_html,
    "markdown": extract_markdown,
    "text": extract_text,
    "openapi": extract_openapi_sections,
    "image": extract_image,
}
