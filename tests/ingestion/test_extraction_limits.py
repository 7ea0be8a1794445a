"""Files that cost hours of CPU or gigabytes while staying within the size limits.

A 300 KB PDF of 2,000 pages drawing one shared stream of 950,000 empty text
operators (7 s a page in pypdf), DOCX files of one-letter paragraphs or runs
that stay under the compression-ratio limit: each is refused within seconds,
naming the limit and its setting. The extraction process itself runs each
document under CPU-time and address-space limits, and is killed when its
document is deleted.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time

import psutil
import pytest
from django.db import connection

from knowledge.ingestion import extraction_process
from knowledge.ingestion.drafts import ChunkingOptions
from knowledge.ingestion.extract import extract_sections
from knowledge.ingestion.extraction_process import extraction_run
from knowledge.ingestion.limits import DEFAULT_LIMITS, IngestLimits, LimitExceeded
from knowledge.ingestion.pipeline import document_process
from knowledge.ingestion.types import ExtractionError
from knowledge.models import Chunk, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_delete, document_upload
from tests.conftest import REPO_ROOT
from tests.ingestion import hostile_files as hostile
from tests.ingestion.test_amplification import assert_refused, extract_in_child

pytestmark = pytest.mark.security

MIB = 1 << 20
OPTIONS = ChunkingOptions(strategy="paragraph", chunk_size=200, chunk_overlap=0)
# Before these limits the hostile files below took minutes to hours: a refusal must come far sooner.
QUICKLY_S = 60
# The content limits out of the way, to reach the time limits behind them.
NO_CONTENT_LIMITS = dataclasses.replace(
    DEFAULT_LIMITS, max_pdf_page_content_bytes=1 << 40, max_pdf_content_bytes=1 << 40
)


@pytest.fixture
def fresh_children():
    extraction_process.children_stop()
    yield
    extraction_process.children_stop()


def _extract_in_extraction_process(filename: str, data: bytes, limits: IngestLimits) -> int:
    """Drafts cut by the pipeline's own extraction process, under ``limits``."""
    with extraction_run(filename=filename, data=data, title="", options=OPTIONS, limits=limits) as run:
        run.title()
        return len(list(run.drafts()))


# --------------------------------------------------------------------------
# PDF: content measured before pypdf reads a page, then time per page and per document
# --------------------------------------------------------------------------


def test_two_thousand_pages_sharing_one_heavy_stream_are_refused_quickly(tmp_path):
    pdf = hostile.pdf_pages_sharing_one_heavy_stream()
    assert len(pdf) < 420_000
    started = time.monotonic()
    result = extract_in_child(tmp_path, "shared.pdf", pdf, timeout=QUICKLY_S)
    assert_refused(result, "drawing instructions", "limit is 256 MB", "KNOWLEDGE_MAX_PDF_CONTENT_MB")
    assert time.monotonic() - started < QUICKLY_S


def test_a_shared_stream_counts_for_every_page_that_draws_it():
    pdf = hostile.pdf_pages_sharing_one_heavy_stream(pages=3, operators=100_000)  # 0.6 MB a page
    limits = dataclasses.replace(DEFAULT_LIMITS, max_pdf_content_bytes=MIB)
    with pytest.raises(LimitExceeded, match=r"first 2 pages hold 1 MB.*KNOWLEDGE_MAX_PDF_CONTENT_MB"):
        extract_sections("shared.pdf", pdf, limits=limits)


def test_a_page_with_too_much_content_is_refused_before_it_is_read():
    pdf = hostile.pdf_pages_sharing_one_heavy_stream(pages=1, operators=950_000)  # 5.4 MB, 7 s in pypdf
    limits = dataclasses.replace(DEFAULT_LIMITS, max_pdf_page_content_bytes=4 * MIB)
    started = time.process_time()
    with pytest.raises(LimitExceeded, match=r"page 1 of the PDF.*KNOWLEDGE_MAX_PDF_PAGE_CONTENT_MB"):
        extract_sections("heavy.pdf", pdf, limits=limits)
    assert time.process_time() - started < 2


def test_a_page_that_takes_too_long_is_refused():
    pdf = hostile.pdf_pages_sharing_one_heavy_stream(pages=3, operators=300_000)  # about 2 s a page
    limits = dataclasses.replace(NO_CONTENT_LIMITS, max_page_cpu_seconds=1)
    with pytest.raises(LimitExceeded, match=r"its page 1 took .*KNOWLEDGE_MAX_PAGE_CPU_SECONDS"):
        extract_sections("slow.pdf", pdf, limits=limits)


def test_the_extraction_process_stops_at_its_cpu_limit_and_the_next_document_works(corpus, fresh_children):
    pdf = hostile.pdf_pages_sharing_one_heavy_stream(pages=2_000)
    limits = dataclasses.replace(NO_CONTENT_LIMITS, max_extraction_cpu_seconds=3)
    started = time.monotonic()
    expected = r"processor time.*3 seconds.*KNOWLEDGE_MAX_EXTRACTION_CPU_SECONDS"
    with pytest.raises(LimitExceeded, match=expected):
        _extract_in_extraction_process("shared.pdf", pdf, limits)
    assert time.monotonic() - started < QUICKLY_S
    pasa = (corpus / "pdf" / "pasa.pdf").read_bytes()
    assert _extract_in_extraction_process("pasa.pdf", pasa, DEFAULT_LIMITS) > 10


def test_the_extraction_process_stops_at_its_memory_limit(fresh_children):
    # 100 MB of runs in one paragraph: lxml's tree of it needs more than a gigabyte.
    docx = hostile.docx_with_many_elements(100_000_000 // 24, paragraphs=False)
    limits = dataclasses.replace(
        DEFAULT_LIMITS, max_office_xml_elements=1 << 40, max_extraction_memory_bytes=600 * MIB
    )
    # The child's reasons reach the pipeline as ExtractionError, their message unchanged.
    with pytest.raises(ExtractionError, match=r"more memory.*600 MB.*KNOWLEDGE_MAX_EXTRACTION_MEMORY_MB"):
        _extract_in_extraction_process("runs.docx", docx, limits)


# --------------------------------------------------------------------------
# DOCX: paragraphs and elements counted by a streaming parser before python-docx builds its tree
# --------------------------------------------------------------------------


def test_a_docx_of_eight_megabytes_of_one_letter_paragraphs_is_refused_quickly(tmp_path):
    docx = hostile.docx_with_many_elements(8_000_000 // 35, paragraphs=True)
    assert len(docx) < 200_000  # within the zip limits: its part expands about 80 times
    started = time.monotonic()
    result = extract_in_child(tmp_path, "letters.docx", docx, timeout=QUICKLY_S)
    assert_refused(result, "more than 100,000 paragraphs", "KNOWLEDGE_MAX_DOCX_PARAGRAPHS")
    assert time.monotonic() - started < QUICKLY_S


def test_a_docx_of_a_hundred_megabytes_of_xml_is_refused_quickly(tmp_path):
    docx = hostile.docx_with_many_elements(100_000_000 // 24, paragraphs=False)
    assert len(docx) < 2 * MIB
    started = time.monotonic()
    result = extract_in_child(tmp_path, "runs.docx", docx, timeout=QUICKLY_S)
    assert_refused(result, "more than 2,000,000 elements", "KNOWLEDGE_MAX_OFFICE_XML_ELEMENTS")
    assert time.monotonic() - started < QUICKLY_S


def test_the_paragraph_count_is_exact():
    docx = hostile.docx_with_many_elements(1_000, paragraphs=True)  # + heading + marker's halves
    extract_sections("ok.docx", docx, limits=dataclasses.replace(DEFAULT_LIMITS, max_docx_paragraphs=1_003))
    fewer = dataclasses.replace(DEFAULT_LIMITS, max_docx_paragraphs=1_002)
    with pytest.raises(LimitExceeded, match="more than 1,002 paragraphs"):
        extract_sections("no.docx", docx, limits=fewer)


@pytest.mark.parametrize("name", ["dummy.docx", "dummy_jap.docx", "dummy.pptx", "dummy.xlsx"])
def test_ordinary_office_files_still_extract_in_the_extraction_process(corpus, fresh_children, name):
    assert _extract_in_extraction_process(name, (corpus / "office" / name).read_bytes(), DEFAULT_LIMITS) > 0


# --------------------------------------------------------------------------
# Deleting a document kills its extraction process
# --------------------------------------------------------------------------


def _extraction_children() -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process().children()
        if "knowledge.ingestion.extraction_process" in " ".join(child.cmdline())
    ]


def _process_in_thread(document_id: int) -> None:
    try:
        document_process(document_id=document_id)
    finally:
        connection.close()  # this thread's own connection


@pytest.mark.django_db(transaction=True)
def test_deleting_a_document_kills_its_extraction_process(alice, settings, fresh_children):
    settings.KNOWLEDGE_INGEST_LIMITS = NO_CONTENT_LIMITS  # hours of work, as before the content limits
    collection = collection_create(name="heavy", owner=alice)
    pdf = hostile.pdf_pages_sharing_one_heavy_stream()
    document = document_upload(
        collection=collection, sync=False, upload=DocumentUpload(filename="shared.pdf", data=pdf)
    ).document
    worker = threading.Thread(target=_process_in_thread, args=(document.pk,))
    worker.start()
    children = []
    try:
        deadline = time.monotonic() + 60
        # The title is written once the child has read it: from then on the pipeline only waits for pages.
        while not Document.objects.filter(pk=document.pk).exclude(title="").exists():
            assert time.monotonic() < deadline, "the document's title never came"
            time.sleep(0.2)
        [child] = children = _extraction_children()
        # Well into the first page (about 7 s of CPU): told by the child's own CPU time, not a sleep.
        while sum(child.cpu_times()[:2]) < 1.0:
            assert time.monotonic() < deadline, "the extraction process never got to work"
            time.sleep(0.1)
        assert child.is_running()
        document_delete(document=Document.objects.get(pk=document.pk))
        gone, alive = psutil.wait_procs([child], timeout=15)
        assert gone and not alive, "the extraction process still runs after its document was deleted"
        worker.join(timeout=15)
        assert not worker.is_alive()
        assert not Chunk.objects.filter(document_id=document.pk).exists()
    finally:
        for child in children:  # a failure above leaves it running: stop it here
            if child.is_running():
                child.kill()
        worker.join()


def test_the_new_limits_are_read_from_the_environment():
    """Sizes in megabytes, times in seconds; a bad value stops the settings from loading."""
    script = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; django.setup();"
        "from django.conf import settings; l = settings.KNOWLEDGE_INGEST_LIMITS;"
        "print(l.max_pdf_content_bytes, l.max_pdf_page_content_bytes, l.max_extraction_memory_bytes,"
        " l.max_extraction_cpu_seconds, l.max_page_cpu_seconds, l.max_docx_paragraphs,"
        " l.max_office_xml_elements)"
    )
    env = {
        **os.environ,
        "KNOWLEDGE_MAX_PDF_CONTENT_MB": "3",
        "KNOWLEDGE_MAX_PDF_PAGE_CONTENT_MB": "2",
        "KNOWLEDGE_MAX_EXTRACTION_MEMORY_MB": "700",
        "KNOWLEDGE_MAX_EXTRACTION_CPU_SECONDS": "7",
        "KNOWLEDGE_MAX_PAGE_CPU_SECONDS": "5",
        "KNOWLEDGE_MAX_DOCX_PARAGRAPHS": "11",
        "KNOWLEDGE_MAX_OFFICE_XML_ELEMENTS": "13",
    }
    run = _settings_in_child(script, env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [str(3 * MIB), str(2 * MIB), str(700 * MIB), "7", "5", "11", "13"]
    env["KNOWLEDGE_MAX_EXTRACTION_CPU_SECONDS"] = "soon"
    bad = _settings_in_child(script, env)
    assert bad.returncode != 0 and "KNOWLEDGE_MAX_EXTRACTION_CPU_SECONDS" in bad.stderr


def _settings_in_child(script: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.django_db(transaction=True)
def test_the_worker_fails_the_heavy_pdf_with_the_reason_and_keeps_the_collection(
    alice, corpus, fresh_children
):
    collection = collection_create(name="mixed", owner=alice)
    good = document_upload(
        collection=collection,
        sync=True,
        upload=DocumentUpload(filename="pasa.pdf", data=(corpus / "pdf" / "pasa.pdf").read_bytes()),
    ).document
    started = time.monotonic()
    heavy = document_upload(
        collection=collection,
        sync=True,
        upload=DocumentUpload(filename="shared.pdf", data=hostile.pdf_pages_sharing_one_heavy_stream()),
    ).document
    assert time.monotonic() - started < QUICKLY_S
    heavy.refresh_from_db()
    good.refresh_from_db()
    assert heavy.status == Document.Status.FAILED
    assert "KNOWLEDGE_MAX_PDF_CONTENT_MB" in heavy.error and "limit is 256 MB" in heavy.error
    assert list(heavy.jobs.values_list("state", "attempts")) == [("failed", 1)]  # no second run
    assert not Chunk.objects.filter(document=heavy).exists()
    assert good.status == Document.Status.READY and Chunk.objects.filter(document=good).exists()


def test_near_the_memory_limit_a_products_limit_keeps_its_reason_and_a_parser_failure_is_memory():
    from knowledge.ingestion.extraction_process import _failure
    from knowledge.ingestion.types import UnreadableDocument

    near = dataclasses.replace(DEFAULT_LIMITS, max_extraction_memory_bytes=1)  # any process is near it
    pages = LimitExceeded("the PDF has 3,000 pages", 2_000, "max_pdf_pages", "pages")
    assert _failure(pages, near) == ("rejected", str(pages))
    kind, reason = _failure(UnreadableDocument("the file is not a valid DOCX document: unknown error"), near)
    assert kind == "exhausted" and "KNOWLEDGE_MAX_EXTRACTION_MEMORY_MB" in reason
