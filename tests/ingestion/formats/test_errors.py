"""Typed extraction errors: a format we do not read is UnsupportedFormat (the upload answers 415), a
readable format whose file cannot be read is UnreadableDocument (400); both are ExtractionErrors."""

from __future__ import annotations

import pytest

from knowledge.ingestion.extract import detect_format, extract_sections
from knowledge.ingestion.types import UnreadableDocument, UnsupportedFormat

OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("report.doc", OLE),  # legacy Office
        ("image.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00"),  # binary, unknown extension
        ("archive.zip", b"PK\x03\x04" + b"\x00" * 64),  # a zip that is no Office document
    ],
)
def test_formats_we_do_not_read_are_unsupported(filename, data):
    with pytest.raises(UnsupportedFormat) as info:
        detect_format(filename, data)
    assert not isinstance(info.value, UnreadableDocument)
    assert "unsupported file type" in str(info.value)


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("empty.txt", b"  \n"),
        ("broken.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 20),
        ("spec.json", b'{"openapi": '),
        ("notes.docx", b"plain text, not a zip"),
    ],
)
def test_supported_formats_that_cannot_be_read_are_unreadable(filename, data):
    with pytest.raises(UnreadableDocument) as info:
        extract_sections(filename, data)
    assert not isinstance(info.value, UnsupportedFormat)
