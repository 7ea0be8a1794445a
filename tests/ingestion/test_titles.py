"""Document titles from metadata or the first heading, else a cleaned file name; source labels."""

from __future__ import annotations

import io

import docx
import pytest

from knowledge.ingestion.summary import extractive_summary
from knowledge.ingestion.titles import document_title, title_clean
from knowledge.retrieval.passages import source_label


@pytest.mark.parametrize(
    "path, title",
    [
        (
            "pdf/influence.pdf",
            "The influence of gap size on the development of fracture union with a micro external fixator",
        ),
        (
            "pdf/pasa.pdf",
            "PaSa: An LLM Agent for Comprehensive Academic Paper Search",
        ),  # first line, no metadata
        ("pdf/paper.pdf", "A Perspective on Explanations of Molecular Prediction Models"),  # largest text
        ("pdf/Seige_of_Vicksburg_Sample_OCR.pdf", "Seige of Vicksburg Sample OCR"),  # "Binder1.pdf" ignored
        ("office/dummy.docx", "Integration of AI Agents and RAG"),  # its first heading
        ("html/flag_day.html", "National Flag of Canada Day - Wikipedia"),
        ("text/gravity_hill.md", "Gravity hill"),
        ("openapi/petstore-expanded-3.0.json", "Swagger Petstore"),
        ("text/obama.txt", "Barack Obama - Wikipedia"),  # HTML saved as .txt
    ],
)
def test_titles_come_from_the_documents_own_metadata_or_first_heading(corpus, path, title):
    file = corpus / path
    assert document_title(file.name, file.read_bytes()) == title


def test_docx_core_title_wins_and_damaged_files_fall_back_to_the_file_name():
    document = docx.Document()
    document.core_properties.title = "Quarterly  report\n"
    document.add_heading("Something else", level=1)
    data = io.BytesIO()
    document.save(data)
    assert document_title("q3_report-final.docx", data.getvalue()) == "Quarterly report"
    assert document_title("q3_report-final.docx", b"PK\x03\x04broken") == "q3 report final"
    assert document_title("notes.pdf", b"%PDF-1.4 garbage") == "notes"
    assert document_title("page.html", b"<html><title> A &amp; B </title></html>") == "A & B"
    assert title_clean("Microsoft Word - minutes.docx") == "" and title_clean("untitled") == ""


def test_summaries_never_open_with_a_file_stem(monkeypatch):
    import numpy as np

    from knowledge.ingestion.types import ChunkDraft, Section

    section = Section(source_ref="page=1", text="PaSa is an agent. It searches papers.", page=1)
    drafts = [
        ChunkDraft(section=section, content="PaSa is an agent that searches papers for you.", token_count=10)
    ]
    vectors = np.ones((1, 384), dtype=np.float32)
    untitled = extractive_summary(filename="pasa.pdf", title="pasa", drafts=drafts, vectors=vectors)
    assert not untitled.summary.lower().startswith("pasa. ")
    titled = extractive_summary(filename="pasa.pdf", title="PaSa: An Agent", drafts=drafts, vectors=vectors)
    assert titled.summary.startswith("PaSa: An Agent. ")


@pytest.mark.parametrize(
    "ref, label",
    [
        ("page=3", "p. 3"),
        ("slide=2", "slide 2"),
        ("sheet=Sales", "sheet Sales"),
        ("heading=History", "History"),
        ("section=INTRODUCTION", "INTRODUCTION"),
        ("operation=POST /pets", "POST /pets"),
        ("component=schemas/User", "schema User"),
        ("odd", "odd"),
        ("", ""),
    ],
)
def test_source_references_read_like_citations(ref, label):
    assert source_label(ref) == label
