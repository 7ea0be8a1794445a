"""Tables in PDFs become rows with their column headers, on their page, under their caption.

Real corpus files: pasa.pdf's results tables are drawn with horizontal rules only (a scientific
paper's style), influence.pdf's as grids; GeoBase's UML diagrams draw boxes that are not tables.
"""

from __future__ import annotations

import re

import pytest

from knowledge.ingestion.extract import extract_sections
from knowledge.models import Chunk, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import chat_ask
from tests.conftest import CORPUS

pytest_plugins = ["tests.synthesis.openai_server"]

PASA = CORPUS / "pdf" / "pasa.pdf"
INFLUENCE = CORPUS / "pdf" / "influence.pdf"
GEOBASE = CORPUS / "pdf" / "GeoBase_NHNC1_Data_Model_UML_EN.pdf"
QUOTE_LINE = re.compile(r'^- "(.+)" \[Source (\d+)\]$', re.MULTILINE)


def tables_of(path) -> dict[str, object]:
    """The table sections of a PDF, by caption."""
    sections = extract_sections(path.name, path.read_bytes())
    return {s.metadata["table"]: s for s in sections if "table" in s.metadata}


def test_a_table_drawn_with_rules_only_gives_rows_with_their_headers():
    tables = tables_of(PASA)
    selector = tables["Table 7: Selector Evaluation."]
    assert selector.source_ref == "page=9"
    assert selector.heading_path == ("Table 7: Selector Evaluation.",)
    assert selector.text.splitlines() == [
        "Method: GPT-4o; Precision: 0.96; Recall: 0.69; F1: 0.80",
        "Method: Qwen-2.5-7b; Precision: 1.0; Recall: 0.38; F1: 0.55",
        "Method: PaSa-7b-Selector; Precision: 0.95; Recall: 0.78; F1: 0.85",
        "Method: PaSa-7b-Selector (Reason First); Precision: 0.94; Recall: 0.76; F1: 0.84",
    ]
    # Two tables one under the other, sharing their rules' ends, are two tables with their own captions.
    results = tables["Table 6: Results on RealScholarQuery."]
    assert results.source_ref == "page=8"
    assert (
        "Method: PaSa-7b; Crawler Recall: 0.7071; Precision: 0.5146; Recall: 0.6111; "
        "Recall@100: 0.6929; Recall@50: 0.6563; Recall@20: 0.5798"
    ) in results.text.splitlines()
    assert "Recall@20: 0.5301" in tables["Table 5: Results on AutoScholarQuery test set."].text
    # A header over two lines labels each column with both ("AutoScholarQuery Precision").
    ablation = tables["Table 8: Ablation study results on AutoScholarQuery test set and RealScholarQuery."]
    assert "Method: w/o RL training; AutoScholarQuery Crawler Recall: 0.6556" in ablation.text


def test_the_page_text_no_longer_holds_the_table_lines_run_together():
    page = next(
        s
        for s in extract_sections(PASA.name, PASA.read_bytes())
        if s.source_ref == "page=9" and "table" not in s.metadata
    )
    assert "PaSa-7b-Selector 0.95 0.78 0.85" not in page.text
    assert "Selector achieves an F1 score of 85%" in page.text  # the prose stays


def test_a_ruled_grid_gives_rows_with_headers_and_its_caption():
    tables = tables_of(INFLUENCE)
    tissue = next(t for caption, t in tables.items() if caption.startswith("Table 3: Quantification"))
    assert tissue.source_ref == "page=25"
    assert "% TISSUE: Cartilage; 1.0mm Gap: 36.7±22.1; 1.5mm Gap: 43.1±24.6; 2.0mm Gap: 37.2±17.9" in (
        tissue.text.splitlines()
    )


def test_boxes_of_a_diagram_are_not_tables():
    tables = tables_of(GEOBASE)
    # The revision history on page 3 is the document's one table; its UML pages draw boxes.
    assert [t.source_ref for t in tables.values()] == ["page=3"]
    assert "Date: May 2004; Version: Draft; Description: Update from the March Workshop comments." in (
        next(iter(tables.values())).text.splitlines()
    )


@pytest.fixture
def pasa(alice, django_capture_on_commit_callbacks) -> Document:
    collection = collection_create(name="papers", owner=alice)
    with django_capture_on_commit_callbacks(execute=True):
        document = document_upload(
            collection=collection, upload=DocumentUpload(filename=PASA.name, data=PASA.read_bytes())
        ).document
    document.refresh_from_db()
    assert document.status == Document.Status.READY, document.error
    return document


@pytest.mark.django_db(transaction=True)
def test_a_chunk_never_splits_a_table_row(pasa):
    document = pasa
    rows = {line for table in tables_of(PASA).values() for line in table.text.splitlines() if line}
    table_chunks = Chunk.objects.filter(document=document, metadata__has_key="table")
    assert table_chunks.count() >= 8
    for chunk in table_chunks:
        caption, _, body = chunk.content.partition("\n")
        assert caption == chunk.metadata["table"]
        for line in body.splitlines():
            assert not line or line in rows, f"a row was cut: {line!r}"


@pytest.mark.django_db(transaction=True)
def test_a_question_about_a_cell_is_answered_by_quoting_its_row_with_the_headers(pasa, alice, no_llm):
    turn = chat_ask(
        user=alice,
        question="What F1 score does the PaSa-7b Selector get?",
        collection_ids=[pasa.collection_id],
    )
    assert turn.mode == "extractive", turn.answer
    quoted, number = QUOTE_LINE.findall(turn.answer)[0]
    assert quoted == "Method: PaSa-7b-Selector; Precision: 0.95; Recall: 0.78; F1: 0.85", turn.answer
    # The citation says which page and which table the row came from.
    citation = next(c for c in turn.cited_sources if c["n"] == int(number))
    assert citation["source_ref"] == "page=9"
    assert citation["text"].startswith("Table 7: Selector Evaluation.\n")
