"""Contextual chunk headers: the heading path, or the document title, within a token cap."""

from __future__ import annotations

from knowledge.ingestion.headers import MAX_HEADER_TOKENS, embedding_text, section_header, title_from_filename
from knowledge.ingestion.types import Section


def words(text: str) -> int:
    return len(text.split())


def test_the_header_is_the_heading_path_or_the_title():
    setting = Section(
        "section=CSRF_COOKIE_SECURE", "Default: False", ("Settings", "Core Settings", "CSRF_COOKIE_SECURE")
    )
    page = Section("page=3", "the Crawler collects papers")
    assert section_header(setting, title="settings", count_tokens=words) == (
        "Settings > Core Settings > CSRF_COOKIE_SECURE"
    )
    assert section_header(page, title="PaSa paper", count_tokens=words) == "PaSa paper"
    assert title_from_filename("GeoBase_NHNC1_Data-Model.pdf") == "GeoBase NHNC1 Data Model"


def test_a_long_path_keeps_its_innermost_headings():
    path = tuple(f"level {i} " + "word " * 10 for i in range(8))
    header = section_header(Section("heading=x", "text", path), title="t", count_tokens=words)
    assert words(header) <= MAX_HEADER_TOKENS
    assert header.endswith("level 7 " + " ".join(["word"] * 10))


def test_the_model_reads_the_header_first_and_the_chunk_unchanged():
    assert embedding_text("Settings > DEBUG", "Default: False") == "Settings > DEBUG\nDefault: False"
    assert embedding_text("", "Default: False") == "Default: False"
