"""Tests for knowledge.ingestion.extract on the real corpus and on built bad inputs.

Pure functions: no database, no Django settings needed.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from pathlib import Path

import docx
import openpyxl
import pptx
import pypdf
import pytest
from pptx.util import Inches

from knowledge.ingestion.extract import detect_format, extract_sections
from knowledge.ingestion.formats import openapi as openapi_format
from knowledge.ingestion.types import ExtractionError, Section

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


@pytest.fixture(autouse=True)
def _corpus_present() -> None:
    """Fail, not skip, without the corpus: a skipped module would pass with nothing checked."""
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing at {CORPUS}")


def read(relative: str) -> bytes:
    return (CORPUS / relative).read_bytes()


def extract(relative: str) -> list[Section]:
    return extract_sections(Path(relative).name, read(relative))


def by_ref(sections: list[Section]) -> dict[str, Section]:
    return {s.source_ref: s for s in sections}


def assert_clean(sections: list[Section]) -> None:
    """The normalisation promised to the chunker holds for every section."""
    assert sections
    for section in sections:
        assert section.text == section.text.strip() and section.text
        assert "\n\n\n" not in section.text
        for line in section.text.split("\n"):
            assert "  " not in line and "\t" not in line, line
            assert line == line.strip()


def docx_bytes(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pdf_with_text(text: str) -> bytes:
    """A one-page PDF with a real text layer, written by hand (no extra dependency)."""
    content = f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def encrypted_pdf(user_password: str, owner_password: str, algorithm: str | None = None) -> bytes:
    reader = pypdf.PdfReader(io.BytesIO(pdf_with_text("Quarterly revenue grew")))
    writer = pypdf.PdfWriter(clone_from=reader)
    writer.encrypt(user_password, owner_password, algorithm=algorithm)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# --------------------------------------------------------------------------
# detect_format
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("pdf/pasa.pdf", "pdf"),
        ("office/dummy.docx", "docx"),
        ("office/dummy.pptx", "pptx"),
        ("office/dummy.xlsx", "xlsx"),
        ("html/apache.html", "html"),
        ("text/gravity_hill.md", "markdown"),
        ("django-docs/faq/general.txt", "text"),
        ("openapi/petstore-expanded-3.0.json", "openapi"),
        ("openapi/petstore-simple-3.1.json", "openapi"),
    ],
)
def test_detect_format_on_corpus(relative, expected):
    assert detect_format(Path(relative).name, read(relative)) == expected


def test_content_beats_a_wrong_extension():
    assert detect_format("report.txt", read("pdf/pasa.pdf")) == "pdf"
    assert detect_format("slides.docx", read("office/dummy.pptx")) == "pptx"
    assert detect_format("data.bin", read("office/dummy.xlsx")) == "xlsx"
    assert detect_format("notes.docx", read("office/dummy.docx")) == "docx"


def test_saved_web_page_named_txt_is_html():
    # Surprise in the corpus: text/bates.txt and text/obama.txt are Wikipedia HTML pages.
    assert detect_format("bates.txt", read("text/bates.txt")) == "html"


def test_rst_and_extensionless_files_are_text():
    assert detect_format("index.rst", b"Title\n=====\n\nBody.") == "text"
    assert detect_format("README", b"Just some words.") == "text"
    assert detect_format("table.csv", b"a,b\n1,2\n") == "csv"


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n  ", b"\xef\xbb\xbf \n"])
def test_empty_data_is_rejected(data):
    with pytest.raises(ExtractionError, match="the file is empty"):
        detect_format("notes.txt", data)


def test_corpus_empty_txt_is_rejected():
    with pytest.raises(ExtractionError, match="empty"):
        extract("text/empty.txt")


GIF_BYTES = b"GIF89a\x01\x00\x01\x00\x00\x00\x00"  # an image kind OCR does not read


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("picture.gif", GIF_BYTES),
        ("setup.exe", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00"),
        ("blob", bytes(range(256)) * 4),
        ("notes.txt", b"text\x00with\x00nul\x00bytes"),
        ("archive.zip", b"PK\x03\x04" + b"\x00" * 40),
    ],
)
def test_unsupported_types_are_rejected_with_the_supported_list(filename, data):
    with pytest.raises(ExtractionError, match="unsupported file type") as info:
        extract_sections(filename, data)
    message = str(info.value)
    for kind in ("PDF", ".docx", ".pptx", ".xlsx", ".csv", "HTML", "Markdown", ".txt", "OpenAPI"):
        assert kind in message


def test_legacy_office_file_gets_a_helpful_message():
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100
    with pytest.raises(ExtractionError, match=r"legacy Office.*\.docx"):
        detect_format("old.doc", ole)


def test_malformed_json_reports_line_and_column():
    data = b'{\n  "openapi": "3.0.0",\n  "info": {"title": "x",}\n}'
    with pytest.raises(ExtractionError, match=r"not valid JSON.*line 3, column 25"):
        detect_format("api.json", data)


def test_malformed_yaml_reports_line_and_column():
    data = b"openapi: 3.0.0\ninfo:\n  title: [unclosed\npaths: {}\n"
    with pytest.raises(ExtractionError, match=r"not valid YAML.*line \d+, column \d+"):
        detect_format("api.yaml", data)


def test_json_that_is_not_openapi_is_rejected():
    data = json.dumps({"name": "my-package", "version": "1.0.0"}).encode()
    with pytest.raises(ExtractionError, match="is JSON but not an OpenAPI 3.x or Swagger 2 document"):
        extract_sections("package.json", data)


def test_json_list_and_openapi_2_are_not_openapi_3():
    with pytest.raises(ExtractionError, match="not an OpenAPI"):
        detect_format("list.json", b"[1, 2, 3]")
    with pytest.raises(ExtractionError, match="is YAML but not an OpenAPI"):
        detect_format("api.yaml", b"openapi: 2.5\n")


def test_yaml_openapi_and_swagger_2_are_detected():
    # Unquoted YAML versions load as floats; they must still be recognised.
    assert detect_format("api.yaml", b"openapi: 3.0\ninfo: {title: t}\npaths: {}\n") == "openapi"
    assert detect_format("api.yml", b"openapi: 3.1.0\npaths: {}\n") == "openapi"
    assert detect_format("old.json", b'{"swagger": "2.0", "paths": {}}') == "openapi"


def test_openapi_is_delegated_to_the_openapi_module(monkeypatch):
    calls = []
    fake_section = Section(source_ref="operation=GET /pets", text="List pets")

    def fake_extract_openapi(filename, data, **options):
        calls.append((filename, data))
        return [fake_section]

    monkeypatch.setattr(openapi_format, "extract_openapi", fake_extract_openapi)

    data = read("openapi/petstore-expanded-3.0.json")
    assert extract_sections("petstore.json", data) == [fake_section]
    assert calls == [("petstore.json", data)]


# --------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pasa_sections():
    return extract("pdf/pasa.pdf")


def test_pdf_one_section_per_page_with_page_refs(pasa_sections):
    # One section per page with text, plus one per table found (tests/ingestion/test_pdf_tables.py).
    pages = [s for s in pasa_sections if "table" not in s.metadata]
    assert 10 <= len(pages) <= 15
    for section in pasa_sections:
        assert section.source_ref == f"page={section.page}"
        assert section.slide is None and section.sheet is None
    pages = [s.page for s in pasa_sections]
    assert pages == sorted(pages) and pages[0] == 1
    assert_clean(pasa_sections)


def test_pdf_phrases_are_on_the_page_where_pypdf_puts_them(pasa_sections):
    reader = pypdf.PdfReader(CORPUS / "pdf/pasa.pdf")
    for phrase, expected_page in [
        ("33,511 / 1,000 / 1,000", 2),
        ("Give me papers about how to rank search results", 14),
    ]:
        pypdf_pages = [
            number for number, page in enumerate(reader.pages, start=1) if phrase in page.extract_text()
        ]
        assert pypdf_pages == [expected_page]
        ours = [s for s in pasa_sections if phrase in s.text]
        assert [(s.page, s.source_ref) for s in ours] == [(expected_page, f"page={expected_page}")]


def test_pdf_reflows_lines_and_rejoins_hyphenated_words(pasa_sections):
    page_1 = pasa_sections[0].text
    # pypdf gives "reading pa-\npers" and "De-\nspite": rejoined.
    assert "reading papers, and selecting relevant references" in page_1
    assert "Despite being trained on synthetic data" in page_1
    # "PaSa-\nGPT-4o" is a compound, not a split word: the hyphen stays.
    assert "PaSa-GPT-4o by 30.36% in recall" in page_1
    # Single line breaks inside a paragraph became spaces; paragraphs still exist.
    assert "\n" not in page_1.split("\n\n")[-1]
    assert page_1.count("\n\n") >= 3


def test_pdf_keeps_paragraph_breaks_for_the_chunker(pasa_sections):
    page_3 = next(s for s in pasa_sections if s.page == 3).text
    paragraphs = page_3.split("\n\n")
    assert "2 Related Work" in paragraphs
    assert any(p.startswith("• We develop two high-quality datasets") for p in paragraphs)


def test_random_bytes_pdf_is_reported_as_unreadable():
    data = os.urandom(4096)
    with pytest.raises(ExtractionError, match="the PDF is damaged or incomplete"):
        extract_sections("scan.pdf", data)


def test_truncated_pdf_is_reported_as_unreadable():
    data = read("pdf/pasa.pdf")[:20000]
    with pytest.raises(ExtractionError, match="the PDF is damaged or incomplete"):
        extract_sections("pasa.pdf", data)


def test_password_protected_pdf_is_reported_as_encrypted():
    data = encrypted_pdf("secret", "secret")
    assert pypdf.PdfReader(io.BytesIO(data)).is_encrypted
    with pytest.raises(ExtractionError, match="the PDF is encrypted"):
        extract_sections("locked.pdf", data)


def test_pdf_with_only_an_owner_password_is_read():
    data = encrypted_pdf("", "owner-secret")
    sections = extract_sections("restricted.pdf", data)
    assert [(s.source_ref, s.text) for s in sections] == [("page=1", "Quarterly revenue grew")]


def test_aes_pdf_with_only_an_owner_password_is_read():
    # cryptography is in the lock: pypdf needs it for AES, so a missing one is a failure, not a skip.
    data = encrypted_pdf("", "owner-secret", algorithm="AES-256")
    assert extract_sections("restricted.pdf", data)[0].text == "Quarterly revenue grew"


def test_pdf_without_a_text_layer_has_no_text():
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ExtractionError, match="no text could be extracted from scan.pdf"):
        extract_sections("scan.pdf", buffer.getvalue())


# --------------------------------------------------------------------------
# DOCX
# --------------------------------------------------------------------------


def test_docx_sections_follow_title_and_heading_styles():
    sections = extract("office/dummy.docx")
    title = "Integration of AI Agents and RAG"
    assert [s.source_ref for s in sections] == [
        f"heading={title}",
        "heading=LangChain and LangGraph",
        "heading=The Importance of Hybrid Search",
    ]
    assert [s.heading_path for s in sections] == [
        (title,),
        (title, "LangChain and LangGraph"),
        (title, "The Importance of Hybrid Search"),
    ]
    # Surprise in the corpus: the intro paragraph is styled "Heading 1". It is
    # far too long to be a heading, so it stays as text under the title.
    assert sections[0].text.startswith("To maximize the capabilities of large language models")
    assert "LangGraph, on the other hand" in sections[1].text
    assert "BM25 or Tantivy" in sections[2].text
    assert_clean(sections)


def test_japanese_docx():
    sections = extract("office/dummy_jap.docx")
    assert [s.source_ref for s in sections] == [
        "heading=AIエージェントとRAGの統合",
        "heading=LangChainとLangGraph",
        "heading=ハイブリッド検索の重要性",
    ]
    assert sections[2].heading_path == ("AIエージェントとRAGの統合", "ハイブリッド検索の重要性")
    assert "ハイブリッド検索" in sections[2].text
    assert_clean(sections)


def test_docx_tables_stay_in_order_under_their_heading():
    document = docx.Document()
    document.core_properties.title = "Price   list"
    document.add_paragraph("Valid from   January.")
    document.add_heading("Hardware", level=1)
    document.add_paragraph("Before the table.")
    table = document.add_table(rows=3, cols=3)
    rows = [("Item", "Price", "Stock"), ("Mouse", "25", ""), ("Screen", "300", "4")]
    for row, values in zip(table.rows, rows, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    merged = document.add_table(rows=2, cols=3)
    merged.cell(0, 0).merge(merged.cell(0, 1)).text = "Bundle"
    merged.cell(0, 2).text = "Total"
    for cell, value in zip(merged.rows[1].cells, ("Kit", "A+B", "40"), strict=True):
        cell.text = value
    document.add_paragraph("After the table.")
    document.add_heading("Cables\tand  adapters", level=2)
    document.add_paragraph("USB-C only.")
    document.add_heading("Services", level=1)
    document.add_paragraph("On request.")

    sections = extract_sections("prices.docx", docx_bytes(document))

    assert [(s.source_ref, s.heading_path) for s in sections] == [
        ("heading=Price list", ("Price list",)),
        ("heading=Hardware", ("Hardware",)),
        ("heading=Cables and adapters", ("Hardware", "Cables and adapters")),
        ("heading=Services", ("Services",)),
    ]
    assert sections[0].text == "Valid from January."
    assert sections[1].text == (
        "Before the table.\n\n"
        "Item: Mouse; Price: 25\n"
        "Item: Screen; Price: 300; Stock: 4\n\n"
        "Bundle: Kit; A+B; Total: 40\n\n"
        "After the table."
    )


def test_docx_text_before_any_heading_uses_the_filename_stem():
    document = docx.Document()
    document.add_paragraph("Just a memo.")
    sections = extract_sections("team memo.docx", docx_bytes(document))
    assert [(s.source_ref, s.text) for s in sections] == [("heading=team memo", "Just a memo.")]


def test_plain_text_named_docx_is_not_a_valid_docx():
    with pytest.raises(ExtractionError, match="the file is not a valid DOCX"):
        extract_sections("letter.docx", b"Dear customer,\nthis is not a Word file.\n")


def test_docx_with_only_empty_paragraphs_has_no_text():
    document = docx.Document()
    document.add_paragraph("   ")
    document.add_heading("Lonely heading", level=1)
    with pytest.raises(ExtractionError, match="no text could be extracted from empty.docx"):
        extract_sections("empty.docx", docx_bytes(document))


# --------------------------------------------------------------------------
# PPTX
# --------------------------------------------------------------------------


def test_corpus_pptx_has_one_slide_section():
    sections = extract("office/dummy.pptx")
    assert len(sections) == 1
    slide = sections[0]
    assert (slide.source_ref, slide.slide, slide.page) == ("slide=1", 1, None)
    # Text boxes only, no title placeholder: nothing for the heading path.
    assert slide.heading_path == ()
    assert slide.text.startswith("Paperqa is helphul RAGsystem\n\nIntegrating AI Agents with RAG")
    assert "is key to improving search accuracy" in slide.text
    assert_clean(sections)


def test_pptx_titles_tables_groups_and_notes():
    presentation = pptx.Presentation()
    title_only = presentation.slide_layouts[5]

    first = presentation.slides.add_slide(title_only)
    first.shapes.title.text = "Quarterly   results"
    rows = [("Region", "Revenue"), ("North", "12"), ("South", "7")]
    table = first.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(4), Inches(2)).table
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    group = first.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(5), Inches(3), Inches(1))
    box.text_frame.text = "Grouped remark"
    first.notes_slide.notes_text_frame.text = "Mention the   South dip."

    presentation.slides.add_slide(presentation.slide_layouts[6])  # blank: no text at all

    third = presentation.slides.add_slide(title_only)
    third.shapes.title.text = "Next steps"

    buffer = io.BytesIO()
    presentation.save(buffer)
    sections = extract_sections("deck.pptx", buffer.getvalue())

    assert [(s.source_ref, s.slide, s.heading_path) for s in sections] == [
        ("slide=1", 1, ("Quarterly results",)),
        ("slide=3", 3, ("Next steps",)),
    ]
    text = sections[0].text
    assert "Region: North; Revenue: 12\nRegion: South; Revenue: 7" in text
    assert "Grouped remark" in text
    assert text.endswith("Notes: Mention the South dip.")


def test_invalid_pptx_is_reported():
    with pytest.raises(ExtractionError, match="not a valid PPTX"):
        extract_sections("deck.pptx", b"PK\x03\x04 not really a zip")


# --------------------------------------------------------------------------
# XLSX and CSV
# --------------------------------------------------------------------------


def test_xlsx_one_section_per_sheet_with_self_describing_rows():
    sections = extract("office/dummy.xlsx")
    workbook = openpyxl.load_workbook(CORPUS / "office/dummy.xlsx", read_only=True)
    names = workbook.sheetnames
    data_rows = {  # non-empty rows minus the header
        ws.title: sum(1 for row in ws.iter_rows(values_only=True) if any(row)) - 1
        for ws in workbook.worksheets
    }
    workbook.close()

    assert names == ["2024年売上", "2023年売上"]
    assert [(s.source_ref, s.sheet) for s in sections] == [(f"sheet={n}", n) for n in names]
    first = sections[0]
    assert first.text.split("\n")[0] == (
        "日付: 2024-04-05; 商品名: 外付けHDD; カテゴリ: 記憶装置; 数量: 1; "
        "単価: 12000; 売上金額: 12000; 担当者: 佐藤"
    )
    for section in sections:
        paragraphs = section.text.split("\n\n")
        lines = section.text.replace("\n\n", "\n").split("\n")
        assert len(lines) == data_rows[section.sheet]
        assert len(paragraphs) == math.ceil(len(lines) / 20)
        assert all(len(p.split("\n")) <= 20 for p in paragraphs)
        assert all(line.startswith("日付: ") for line in lines)
    assert_clean(sections)


def test_xlsx_header_is_first_non_empty_row_and_empty_cells_are_skipped():
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Stock"
    sheet.append([])
    sheet.append([None, "Item", "Count", "Price"])
    sheet.append([None, "Bolt", 2.0, 0.25])
    sheet.append([])
    sheet.append([None, "Nut", None, 0.1])
    workbook.create_sheet("Empty")
    buffer = io.BytesIO()
    workbook.save(buffer)

    sections = extract_sections("stock.xlsx", buffer.getvalue())

    assert [(s.source_ref, s.text) for s in sections] == [
        ("sheet=Stock", "Item: Bolt; Count: 2; Price: 0.25\nItem: Nut; Price: 0.1")
    ]


def test_invalid_xlsx_is_reported():
    with pytest.raises(ExtractionError, match="not a valid XLSX"):
        extract_sections("sheet.xlsx", b"name,value\n")


def test_csv_uses_header_sniffed_delimiter_and_filename_stem():
    data = "\ufeffName;City;Age\nAda;London;36\n;;\nAlan;;41\n".encode()
    sections = extract_sections("people 2024.csv", data)
    assert [(s.source_ref, s.sheet, s.text) for s in sections] == [
        (
            "sheet=people 2024",
            "people 2024",
            "Name: Ada; City: London; Age: 36\nName: Alan; Age: 41",
        )
    ]


def test_csv_falls_back_to_latin1_and_splits_every_20_rows():
    rows = ["produit,prix"] + [f"caf\xe9 {n},{n}" for n in range(45)]
    sections = extract_sections("menu.csv", "\n".join(rows).encode("latin-1"))
    paragraphs = sections[0].text.split("\n\n")
    assert [len(p.split("\n")) for p in paragraphs] == [20, 20, 5]
    assert paragraphs[0].split("\n")[0] == "produit: café 0; prix: 0"


# --------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------


def test_wikipedia_html_sections_without_scripts_or_menus():
    sections = extract("html/flag_day.html")
    refs = [s.source_ref for s in sections]
    # The <h1> sits in a <header> inside <main>: it must survive chrome removal.
    assert refs[0] == "heading=National Flag of Canada Day"
    assert {"heading=Background", "heading=Flag Day", "heading=See also"} <= set(refs)
    background = by_ref(sections)["heading=Background"]
    assert background.heading_path == ("National Flag of Canada Day", "History", "Background")
    assert "Maple Leaf flag" in background.text
    assert "observed annually on February 15" in sections[0].text
    everything = "\n".join(s.text for s in sections)
    for chrome in ("RLQ", "mw.config", "wgHostname", "Jump to content", "Main page", "[edit]"):
        assert chrome not in everything
    # Boilerplate the main-content extractor leaves out: language links, "Edit links",
    # the Commons box and the external links list.
    for boilerplate in ("Español", "Bahasa Melayu", "Edit links", "Wikimedia Commons has media", "Fred"):
        assert boilerplate not in everything
    assert "heading=External links" not in refs
    # Reference lists and their "[1]" markers are citations, not content.
    assert "heading=Footnotes" not in refs
    assert "1965.[1]" not in sections[0].text and "in 1965." in sections[0].text
    # The infobox is a table trafilatura keeps (minus its image caption's hidden date).
    assert "Date; February 15" in sections[0].text
    assert_clean(sections)


def test_wikipedia_hatnotes_are_left_out_and_figure_captions_kept():
    sections = by_ref(extract("text/obama.txt"))
    campaign = sections["heading=2012"].text
    assert "Main articles:" not in campaign
    # A caption on the page's own figure is content: it is the only place stating 332–206.
    assert "Obama won 332–206." in campaign
    assert "Afrikaans" not in sections["heading=Barack Obama"].text


def test_apache_status_page_tables_are_rendered_row_wise():
    sections = extract("html/apache.html")
    assert [s.source_ref for s in sections] == [
        "heading=Apache Server Status for ub2fkkeeyl3jgwwz.onion (via 127.0.0.1)"
    ]
    text = sections[0].text
    assert "Server Version: Apache/2.4.7 (Ubuntu) PHP/5.5.9-1ubuntu4.22" in text.split("\n\n")
    assert (
        "Srv: 0-0; PID: 1365; Acc: 0/15/93; M: _; CPU: 0.10; SS: 1; Req: 0; Conn: 0.0; "
        "Child: 0.22; Slot: 1.53; Client: 127.0.0.1; VHost: ub2fkkeeyl3jgwwz.onion:80; "
        "Request: GET /secret/ HTTP/1.1"
    ) in text
    assert_clean(sections)


def test_html_named_txt_is_extracted_as_html():
    sections = extract("text/bates.txt")
    refs = [s.source_ref for s in sections]
    assert refs[0] == "heading=Frederick Bates (politician)"
    assert "heading=Early life and education" in refs  # no "[ edit ]" in the heading
    everything = "\n".join(s.text for s in sections)
    assert "born in 1777" in everything
    assert "<div" not in everything and "RLCONF" not in everything


def test_html_chrome_lists_paragraphs_and_title_fallback():
    html = b"""<!doctype html><html><head><title>Team   handbook</title>
    <style>.x { color: red }</style></head><body>
    <header>Site banner</header>
    <nav><a href="/">Home</a></nav>
    <div role="navigation">Breadcrumbs</div>
    <p>Welcome
       aboard.</p>
    <main><article>
      <header><h1>Onboarding</h1></header>
      <p>First <b>day</b>:<br>badge<br>laptop</p>
      <ul><li>Meet the team</li><li>Read the wiki</li></ul>
      <h3>Tools</h3>
      <table><tr><th>Tool</th><th>Use</th></tr><tr><td>Git</td><td>code</td></tr></table>
      <script>track()</script><form><input value="search"></form>
      <aside>Related links</aside>
    </article></main>
    <footer>Copyright</footer></body></html>"""
    sections = extract_sections("handbook.html", html)
    assert [(s.source_ref, s.heading_path) for s in sections] == [
        ("heading=Onboarding", ("Onboarding",)),
        ("heading=Tools", ("Onboarding", "Tools")),
    ]
    assert sections[0].text == "First day:\nbadge\nlaptop\n\nMeet the team\n\nRead the wiki"
    assert sections[1].text == "Tool: Git; Use: code"


def test_html_without_main_keeps_text_before_first_heading_under_title():
    html = (
        b"<html><head><title>Team   handbook</title></head><body><header>Banner</header>"
        b"<p>Intro text.</p><h2>Rules</h2><p>Be kind.</p><footer>(c)</footer></body></html>"
    )
    sections = extract_sections("handbook.html", html)
    assert [(s.source_ref, s.text) for s in sections] == [
        ("heading=Team handbook", "Intro text."),
        ("heading=Rules", "Be kind."),
    ]
    untitled = extract_sections("faq page.htm", b"<p>Only text.</p>")
    assert [(s.source_ref, s.heading_path) for s in untitled] == [("heading=faq page", ("faq page",))]


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------


def test_markdown_corpus_file():
    sections = extract("text/gravity_hill.md")
    assert [(s.source_ref, s.heading_path) for s in sections] == [
        ("heading=Gravity hill", ("Gravity hill",)),
        ("heading=See also", ("Gravity hill", "See also")),
    ]
    assert "A **gravity hill**, also known as a" in sections[0].text
    assert "List of gravity hills" in sections[1].text
    assert_clean(sections)


def test_markdown_headings_fences_setext_and_inline_markup():
    text = """Preface   line.

Install [Django](https://djangoproject.com) `pip` **now**
=========================================================

Run this:

```bash
# not a heading
pip install django
```

Usage *notes*
-------------

- item one
---

### Deep `config_value` ###
Set it.
"""
    sections = extract_sections("guide.md", text.encode())
    assert [(s.source_ref, s.heading_path) for s in sections] == [
        ("heading=guide", ("guide",)),
        ("heading=Install Django pip now", ("Install Django pip now",)),
        ("heading=Usage notes", ("Install Django pip now", "Usage notes")),
        (
            "heading=Deep config_value",
            ("Install Django pip now", "Usage notes", "Deep config_value"),
        ),
    ]
    assert sections[0].text == "Preface line."
    assert "# not a heading\npip install django" in sections[1].text
    assert sections[2].text == "- item one\n---"
    assert sections[3].text == "Set it."


# --------------------------------------------------------------------------
# Plain text and reStructuredText
# --------------------------------------------------------------------------


def test_rst_titles_become_text_sections():
    sections = extract("django-docs/faq/general.txt")
    refs = [s.source_ref for s in sections]
    assert refs[:3] == [
        "section=Why does this project exist?",
        'section=What does "Django" mean, and how do you pronounce it?',
        "section=Is Django stable?",
    ]
    assert sections[0].heading_path == ("FAQ: General", "Why does this project exist?")
    assert "Django grew from a very practical need" in sections[0].text
    assert not any(re.fullmatch(r"=+", line) for s in sections for line in s.text.split("\n"))
    assert_clean(sections)


def test_rst_title_markup_is_stripped_and_levels_nest():
    sections = extract("django-docs/releases/1.11.txt")
    refs = [s.source_ref for s in sections]
    assert "section=django.contrib.admin" in refs
    section = by_ref(sections)["section=django.contrib.admin"]
    assert section.heading_path[0] == "Django 1.11 release notes"
    assert len(section.heading_path) >= 3


def test_all_caps_titles_in_plain_text():
    text = (
        "Lease agreement between A and B.\n\n"
        "TERMS AND CONDITIONS\n\n"
        "The tenant pays monthly.\nLate fees apply.\n\n"
        "TERMINATION\n\n"
        "Either party may end the lease.\n"
    )
    sections = extract_sections("lease.txt", text.encode())
    assert [(s.source_ref, s.text) for s in sections] == [
        ("section=lease", "Lease agreement between A and B."),
        ("section=TERMS AND CONDITIONS", "The tenant pays monthly.\nLate fees apply."),
        ("section=TERMINATION", "Either party may end the lease."),
    ]


def test_plain_text_without_titles_is_one_section_and_latin1_is_decoded():
    data = "Caf\xe9 opening hours:   8am\tto 6pm.\r\n\r\n\r\nClosed on Sundays.".encode("latin-1")
    sections = extract_sections("cafe notes.txt", data)
    assert [(s.source_ref, s.heading_path, s.text) for s in sections] == [
        (
            "section=cafe notes",
            ("cafe notes",),
            "Café opening hours: 8am to 6pm.\n\nClosed on Sundays.",
        )
    ]
