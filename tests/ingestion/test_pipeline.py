"""Ingestion end to end: upload service -> django-q2 task -> pipeline -> chunks in pgvector.

These tests commit (transactional_db) because tasks are enqueued on commit;
tasks run synchronously in the test process (settings_test).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import F
from pypdf import PdfReader, PdfWriter

from config.base.errors import KnowledgeError, UnsupportedMediaError, UploadTooLargeError
from knowledge.clients.embedding_registry import E5_SMALL
from knowledge.ingestion.reindex import release_build_start
from knowledge.models import Chunk, ChunkProfile, Document, Release
from knowledge.services.collections import collection_create, collection_reindex
from knowledge.services.documents import (
    PROCESSING_INTERRUPTED,
    DocumentUpload,
    document_delete,
    document_retry,
    document_upload,
)
from knowledge.tasks import process_document
from knowledge.text.word_pieces import MAX_CONTENT_TOKENS, count_tokens
from tests.conftest import REPO_ROOT, test_database_url
from tests.releases.helpers import held_promoted
from tests.retrieval.test_lexical import assert_lexical_copy_is_exact

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def collection(alice):
    return collection_create(name="papers", owner=alice)


def upload(collection, path: Path) -> Document:
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    result.document.refresh_from_db()
    return result.document


def chunks_of(document: Document):
    return Chunk.objects.filter(document=document).order_by("index")


def test_pdf_chunks_carry_the_page_they_came_from(collection, corpus):
    path = corpus / "pdf" / "pasa.pdf"
    document = upload(collection, path)
    assert document.status == Document.Status.READY, document.error
    chunks = list(chunks_of(document))
    assert len(chunks) >= 15
    pages = PdfReader(path).pages
    for chunk in chunks:
        assert chunk.source_ref == f"page={chunk.page}"
        page_words = set(pages[chunk.page - 1].extract_text().replace("-", " ").split())
        chunk_words = [w for w in chunk.content.replace("-", " ").split() if w.isalpha() and len(w) > 6]
        found = sum(w in page_words for w in chunk_words)
        assert found >= 0.6 * len(chunk_words), (chunk.page, chunk.content[:200])
    assert {c.page for c in chunks} == set(range(1, len(pages) + 1))
    assert all(c.token_count <= MAX_CONTENT_TOKENS for c in chunks)
    assert all(count_tokens(c.content) == c.token_count for c in chunks[:20])


def test_embeddings_are_stored_unit_length_with_model_and_profile(collection, corpus):
    document = upload(collection, corpus / "office" / "dummy.docx")
    chunk = chunks_of(document).first()
    vector = np.array(chunk.embedding)
    assert vector.shape == (384,)
    assert abs(np.linalg.norm(vector) - 1) < 1e-3
    assert chunk.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert chunk.chunk_profile_id == collection.chunk_profile_id
    assert chunk.source_ref.startswith("heading=")
    # The generated full-text column is filled from the content.
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_vector::text FROM knowledge_chunk WHERE id = %s", [chunk.pk])
        assert cursor.fetchone()[0]


@pytest.mark.parametrize(
    ("relative", "ref_prefix"),
    [
        ("office/dummy.docx", "heading="),
        ("office/dummy_jap.docx", "heading="),
        ("office/dummy.pptx", "slide="),
        ("office/dummy.xlsx", "sheet="),
        ("html/flag_day.html", "heading="),
        ("html/apache.html", "heading="),
        ("text/gravity_hill.md", "heading="),
        ("openapi/petstore-expanded-3.0.json", ""),
        ("openapi/circular-3.0.json", ""),
        ("django-docs/topics/signals.txt", "section="),
    ],
)
def test_every_format_ingests_with_strict_source_refs(collection, corpus, relative, ref_prefix):
    document = upload(collection, corpus / relative)
    assert document.status == Document.Status.READY, document.error
    chunks = list(chunks_of(document))
    assert chunks
    for chunk in chunks:
        assert chunk.source_ref.startswith(ref_prefix or ("operation=", "component="))
        assert chunk.content.strip()
    assert document.chunks_done == document.chunks_total == len(chunks)
    assert document.sections_done == document.sections_total > 0


def test_csv_rows_are_self_describing(collection, tmp_path):
    path = tmp_path / "prices.csv"
    path.write_text("product,price,currency\nwidget,4.50,EUR\ngadget,12,USD\n")
    document = upload(collection, path)
    assert document.status == Document.Status.READY, document.error
    chunk = chunks_of(document).get()
    assert chunk.source_ref == "sheet=prices"
    assert "product: widget; price: 4.50; currency: EUR" in chunk.content


def test_openapi_operations_link_to_the_components_they_reference(collection, corpus):
    document = upload(collection, corpus / "openapi" / "petstore-expanded-3.0.json")
    post = chunks_of(document).filter(source_ref="operation=POST /pets").first()
    assert post is not None
    assert "petstore-expanded-3.0.json:components/schemas/NewPet" in post.ref_ids
    new_pet = chunks_of(document).filter(source_ref="component=schemas/NewPet").first()
    assert post.element_id in new_pet.referenced_by


def test_same_bytes_twice_give_one_document_and_one_embedding_run(collection, corpus):
    path = corpus / "office" / "dummy.docx"
    first = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    second = document_upload(
        collection=collection, upload=DocumentUpload(filename="renamed.docx", data=path.read_bytes())
    )
    assert first.created and not second.created
    assert second.document.pk == first.document.pk
    assert Document.objects.filter(collection=collection).count() == 1


def test_task_run_twice_leaves_exactly_one_chunk_set(collection, corpus):
    document = upload(collection, corpus / "text" / "gravity_hill.md")
    before = list(chunks_of(document).values_list("index", "source_ref", "content"))
    process_document(document.pk)
    process_document(document.pk)
    after = list(chunks_of(document).values_list("index", "source_ref", "content"))
    assert after == before
    assert Chunk.objects.filter(document=document).count() == len(before)
    assert_lexical_copy_is_exact()  # the lexical search's copy follows the replaced chunk set


@pytest.mark.security
def test_a_worker_killed_mid_document_is_reported_interrupted_and_retry_completes_one_set(
    collection, corpus, client, alice, settings
):
    """A real worker process is killed while embedding: nothing is half-written, the document is
    reported failed ("processing was interrupted") once its heartbeat is stale, and retry completes it."""
    document = upload(collection, corpus / "pdf" / "pasa.pdf")
    expected = chunks_of(document).count()
    Chunk.objects.filter(document=document).delete()
    Document.objects.filter(pk=document.pk).update(status=Document.Status.UPLOADED, chunks_done=0)

    worker = _start_worker_process(document.pk)
    try:
        _wait_until(lambda: Document.objects.get(pk=document.pk).chunks_done > 0, worker)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    assert chunks_of(document).count() == 0  # nothing half-written
    client.force_login(alice)  # the API accepts the session too
    url = f"/api/v1/documents/{document.pk}/"
    assert client.get(url).json()["status"] == "processing"  # a recent heartbeat: maybe still alive

    # What the clock does to a dead worker's document: its last heartbeat recedes into the past.
    stale_for = datetime.timedelta(seconds=settings.KNOWLEDGE_PROCESSING_STALE_SECONDS + 1)
    Document.objects.filter(pk=document.pk).update(updated_at=F("updated_at") - stale_for)
    body = client.get(url).json()
    assert (body["status"], body["error"]) == ("failed", PROCESSING_INTERRUPTED)
    assert body["error"].startswith("processing was interrupted")
    listed = client.get(f"/api/v1/collections/{collection.pk}/documents/").json()["results"]
    assert [(d["id"], d["status"]) for d in listed] == [(document.pk, "failed")]

    assert client.post(f"{url}retry/").status_code == 202
    document.refresh_from_db()
    assert document.status == Document.Status.READY, document.error
    assert chunks_of(document).count() == expected
    assert sorted(chunks_of(document).values_list("index", flat=True)) == list(range(expected))


def _start_worker_process(document_id: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "KNOWLEDGE_EMBEDDING_BATCH_SIZE": "8",
    }
    code = f"from knowledge.tasks import process_document; process_document({document_id})"
    return subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO_ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_until(condition, process: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if process.poll() is not None:
            pytest.fail(f"worker exited early: {process.stderr.read().decode()[-2000:]}")
        time.sleep(0.2)
    pytest.fail("the worker never reported progress")


def _encrypted_pdf(source: Path) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("filename", "make_data", "message"),
    [
        (
            "corrupt.pdf",
            lambda c: (c / "pdf" / "pasa.pdf").read_bytes()[:4000],
            "the PDF is damaged or incomplete",
        ),
        ("locked.pdf", lambda c: _encrypted_pdf(c / "pdf" / "pasa.pdf"), "the PDF is encrypted"),
        ("report.docx", lambda c: b"this is plain text, not a zip archive", "not a valid DOCX"),
    ],
)
def test_unreadable_files_end_failed_with_a_reason_and_harm_nothing(
    collection, corpus, filename, make_data, message
):
    good = upload(collection, corpus / "office" / "dummy.docx")
    good_chunks = list(chunks_of(good).values_list("pk", "content"))
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=filename, data=make_data(corpus))
    )
    bad = Document.objects.get(pk=result.document.pk)
    assert bad.status == Document.Status.FAILED
    assert message in bad.error
    assert chunks_of(bad).count() == 0
    assert list(chunks_of(good).values_list("pk", "content")) == good_chunks
    assert Document.objects.get(pk=good.pk).status == Document.Status.READY


@pytest.mark.parametrize(
    ("filename", "data", "error", "message"),
    [
        ("empty.txt", b"", KnowledgeError, "the file is empty"),
        ("blank.md", b"  \n\n ", KnowledgeError, "the file is empty"),
        (
            "logo.gif",
            b"GIF89a\x01\x00\x01\x00\x00\x00\x00" + bytes(range(256)) * 4,
            UnsupportedMediaError,
            "unsupported file type",
        ),
        ("setup.exe", b"MZ\x90\x00" + bytes(200), UnsupportedMediaError, "unsupported file type"),
        ("spec.json", b'{"openapi": "3.0.0", "paths": {', KnowledgeError, "line 1"),
        ("spec.yaml", b"openapi: 3.0.0\npaths: [unclosed\n", KnowledgeError, "line"),
        ("data.json", b'{"name": "not an api"}', KnowledgeError, "not an OpenAPI"),
    ],
)
def test_bad_uploads_are_refused_up_front(collection, filename, data, error, message):
    with pytest.raises(error, match=message):
        document_upload(collection=collection, upload=DocumentUpload(filename=filename, data=data))
    assert not Document.objects.filter(collection=collection).exists()


def test_uploads_over_the_size_limit_are_refused(collection, settings):
    settings.KNOWLEDGE_MAX_UPLOAD_BYTES = 1024
    with pytest.raises(UploadTooLargeError, match="the limit is"):
        document_upload(
            collection=collection, upload=DocumentUpload(filename="big.txt", data=b"word " * 1000)
        )
    assert not Document.objects.exists()


def test_a_new_version_replaces_the_old_only_once_ready(collection, tmp_path):
    path = tmp_path / "policy.md"
    path.write_text("# Leave\n\nStaff get 25 days of annual leave.\n")
    v1 = upload(collection, path)
    assert v1.status == Document.Status.READY

    path.write_text("# Leave\n\nStaff get 30 days of annual leave.\n")
    v2 = upload(collection, path)
    assert v2.status == Document.Status.READY
    assert v2.replaces_id is None  # the old version is gone, so is the link to it
    assert not Document.objects.filter(pk=v1.pk).exists()
    contents = " ".join(Chunk.objects.filter(collection=collection).values_list("content", flat=True))
    assert "30 days" in contents and "25 days" not in contents
    assert_lexical_copy_is_exact()


def test_failed_new_version_keeps_the_old_one_searchable(collection, corpus):
    v1 = upload(collection, corpus / "office" / "dummy.docx")
    failed = document_upload(
        collection=collection, upload=DocumentUpload(filename="dummy.docx", data=b"not a zip at all")
    )
    assert Document.objects.get(pk=failed.document.pk).status == Document.Status.FAILED
    assert Document.objects.get(pk=v1.pk).status == Document.Status.READY
    assert chunks_of(v1).count() > 0


def test_failed_document_can_be_retried(collection, corpus):
    failed = document_upload(
        collection=collection, upload=DocumentUpload(filename="report.docx", data=b"not a zip")
    )
    document = document_retry(document=failed.document)
    assert document.status == Document.Status.FAILED  # same bytes, same honest failure
    assert "not a valid DOCX" in document.error
    good = upload(collection, corpus / "office" / "dummy.docx")
    with pytest.raises(KnowledgeError, match="re-index"):
        document_retry(document=good)


def test_reindex_keeps_old_chunks_searchable_until_the_new_set_is_complete(collection, corpus):
    first = upload(collection, corpus / "text" / "gravity_hill.md")
    upload(collection, corpus / "office" / "dummy.docx")
    old_profile = collection.chunk_profile
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)

    # Simulate a re-index that has finished one document but not the other.
    collection.pending_chunk_profile = small
    collection.save()
    process_document(first.pk, small.pk)
    collection.refresh_from_db()
    assert collection.chunk_profile == old_profile  # still searching the complete old set
    assert Chunk.objects.filter(collection=collection, chunk_profile=small).exists()

    collection_reindex(collection=collection, chunk_profile=small)
    collection.refresh_from_db()
    assert collection.chunk_profile == old_profile  # built and held: the gate had no questions
    held_promoted(collection)
    assert collection.chunk_profile == small
    assert collection.pending_chunk_profile is None
    new_chunks = Chunk.objects.filter(collection=collection, chunk_profile=small)
    assert set(new_chunks.values_list("document_id", flat=True)) == set(
        Document.objects.filter(collection=collection).values_list("pk", flat=True)
    )
    assert all(c.token_count <= MAX_CONTENT_TOKENS for c in new_chunks)
    # Chunks record the profile that made them; the old set is kept for comparison.
    assert Chunk.objects.filter(collection=collection, chunk_profile=old_profile).exists()


def test_a_reindex_waiting_only_for_a_deleted_document_switches_at_the_delete(collection, corpus):
    first = upload(collection, corpus / "text" / "gravity_hill.md")
    second = upload(collection, corpus / "office" / "dummy.docx")
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)
    # A re-index that has finished one document; the other is deleted before its run.
    collection.pending_chunk_profile = small
    collection.save()
    release_build_start(collection=collection, chunk_set=(small.pk, collection.embedding_model))
    process_document(first.pk, small.pk)
    collection.refresh_from_db()
    assert collection.pending_chunk_profile == small
    assert Release.objects.get(collection=collection, chunk_profile=small).state == "building"
    document_delete(document=Document.objects.get(pk=second.pk))
    # Complete at the delete: the gate ran, and held it (no questions to measure it on).
    held_promoted(collection)
    assert collection.chunk_profile == small and collection.pending_chunk_profile is None


def test_a_collection_goes_back_to_an_earlier_profile_with_fresh_chunks(collection, corpus):
    upload(collection, corpus / "text" / "gravity_hill.md")
    earlier = collection.chunk_profile
    earlier_ids = set(
        Chunk.objects.filter(collection=collection, chunk_profile=earlier).values_list("pk", flat=True)
    )
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)
    collection_reindex(collection=collection, chunk_profile=small)
    held_promoted(collection)
    assert collection.chunk_profile == small
    # Back again: the set left from before must not count as done (it may hold replaced text).
    collection_reindex(collection=collection, chunk_profile=earlier)
    held_promoted(collection)
    assert collection.chunk_profile == earlier
    again = set(
        Chunk.objects.filter(collection=collection, chunk_profile=earlier).values_list("pk", flat=True)
    )
    assert again and not again & earlier_ids
    assert_lexical_copy_is_exact()


def test_a_profile_reindex_keeps_a_model_change_in_progress(collection, corpus):
    upload(collection, corpus / "text" / "gravity_hill.md")
    # A model change under way (queued, not yet run), then a re-index asked with the current profile only.
    collection.pending_embedding_model = E5_SMALL
    collection.save()
    collection_reindex(collection=collection, chunk_profile=collection.chunk_profile)
    held_promoted(collection)
    assert collection.embedding_model == E5_SMALL and collection.pending_embedding_model == ""


def _ingest_json(*args, failed: str | None = None) -> list[dict]:
    """The command's JSON rows; ``failed``: the error it must end with (a non-zero exit)."""
    out = io.StringIO()
    if failed is None:
        call_command("knowledge_ingest", *args, stdout=out, stderr=io.StringIO())
    else:
        with pytest.raises(CommandError, match=failed) as error:
            call_command("knowledge_ingest", *args, stdout=out, stderr=io.StringIO())
        assert error.value.returncode == 1
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_knowledge_ingest_command_wait_json(alice, corpus, tmp_path):
    folder = tmp_path / "docs"
    (folder / "nested").mkdir(parents=True)
    (folder / "nested" / "notes.md").write_text("# Notes\n\nThe capital of France is Paris.\n")
    rows = _ingest_json(
        "--collection",
        "cli",
        "--create",
        "--owner",
        "alice",
        "--wait",
        "--json",
        str(corpus / "office" / "dummy.docx"),
        str(corpus / "text" / "empty.txt"),
        str(folder),
        failed="1 of 3 documents failed",
    )
    by_name = {row["filename"]: row for row in rows}
    assert set(by_name) == {"dummy.docx", "empty.txt", "notes.md"}
    assert by_name["dummy.docx"]["status"] == "ready" and by_name["dummy.docx"]["chunks"] > 0
    assert by_name["notes.md"]["status"] == "ready"
    assert by_name["empty.txt"] == {
        "filename": "empty.txt",
        "document_id": None,
        "status": "failed",
        "chunks": 0,
        "error": "empty.txt: the file is empty",
    }
    assert set(rows[0]) == {"filename", "document_id", "status", "chunks", "error"}

    again = _ingest_json(
        "--collection", "cli", "--owner", "alice", "--wait", "--json", str(corpus / "office" / "dummy.docx")
    )
    assert again[0]["document_id"] == by_name["dummy.docx"]["document_id"]


def test_a_file_replaced_by_a_namesake_later_in_the_same_run_is_reported_as_replaced(alice, tmp_path):
    # Two folders of one documentation set often hold files of the same name (index.txt ...).
    for folder, capital in (("first", "Paris"), ("second", "Rome")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.md").write_text(f"# Notes\n\nThe capital is {capital}.\n")
    rows = _ingest_json(
        "--collection", "twins", "--create", "--owner", "alice", "--wait", "--json",
        str(tmp_path / "first" / "notes.md"), str(tmp_path / "second" / "notes.md"),
    )  # fmt: skip
    assert [row["status"] for row in rows] == ["replaced", "ready"]
    assert rows[0]["error"] == "replaced by a later file of the same name" and rows[0]["chunks"] == 0
    assert rows[1]["chunks"] > 0


def test_knowledge_ingest_command_creates_a_collection_with_the_embedding_model_asked(alice, corpus):
    e5 = "intfloat/multilingual-e5-small"
    args = ["--collection", "multilingual", "--owner", "alice", "--wait", "--json"]
    rows = _ingest_json(*args, "--create", "--embedding-model", e5, str(corpus / "office" / "dummy_jap.docx"))
    assert rows[0]["status"] == "ready" and rows[0]["chunks"] > 0
    document = Document.objects.select_related("collection").get(pk=rows[0]["document_id"])
    assert document.collection.embedding_model == e5
    assert set(Chunk.objects.filter(document=document).values_list("embedding_model", flat=True)) == {e5}
    # An existing collection's model changes by a re-index, never by an upload's option.
    with pytest.raises(CommandError, match="re-index it to change models"):
        call_command(
            "knowledge_ingest",
            *args,
            "--embedding-model",
            "sentence-transformers/all-MiniLM-L6-v2",
            str(corpus / "office" / "dummy.docx"),
        )
    with pytest.raises(CommandError, match="unknown embedding model 'nope'; choose one of: "):
        call_command(
            "knowledge_ingest", *args, "--embedding-model", "nope", str(corpus / "office" / "dummy.docx")
        )


def test_knowledge_ingest_command_errors(alice, corpus):
    with pytest.raises(CommandError, match="pass --create"):
        call_command("knowledge_ingest", "--collection", "nope", str(corpus / "office" / "dummy.docx"))
    with pytest.raises(CommandError, match="no such file"):
        call_command("knowledge_ingest", "--collection", "x", "--create", "/no/such/file.pdf")
    with pytest.raises(CommandError, match="no user named"):
        call_command(
            "knowledge_ingest",
            "--collection",
            "x",
            "--create",
            "--owner",
            "ghost",
            str(corpus / "office" / "dummy.docx"),
        )
    with pytest.raises(CommandError, match="no chunk profile named"):
        call_command(
            "knowledge_ingest",
            "--collection",
            "x",
            "--create",
            "--profile",
            "missing",
            str(corpus / "office" / "dummy.docx"),
        )


# --- extraction overlapped with embedding ----------------------------------------------


def _sequential(document, profile):
    """What the pipeline computed before extraction ran in its own thread: all drafts, then all vectors."""
    from knowledge.clients.embedding import embed_texts
    from knowledge.ingestion.headers import embedding_text
    from knowledge.ingestion.pipeline import document_chunk_drafts

    drafts = document_chunk_drafts(document, profile)
    return drafts, embed_texts([embedding_text(d.header, d.content) for d in drafts])


def test_overlapped_extraction_yields_the_same_chunks_and_vectors(collection, corpus, monkeypatch, settings):
    from knowledge.ingestion import pipeline

    document = upload(collection, corpus / "pdf" / "pasa.pdf")
    profile = collection.chunk_profile
    expected_drafts, expected_vectors = _sequential(document, profile)
    # Small windows: many hand-overs between the extracting thread and the encoder.
    settings.KNOWLEDGE_EMBEDDING_BATCH_SIZE = 4
    monkeypatch.setattr(pipeline, "_WINDOW_BATCHES", 2)
    monkeypatch.setattr(pipeline, "_PRODUCER_AHEAD", 3)
    drafts, vectors = pipeline._drafts_and_vectors(document, profile)
    assert drafts == expected_drafts
    assert len(drafts) > 8
    np.testing.assert_allclose(vectors, expected_vectors, atol=1e-5)
    stored = np.array([c.embedding for c in chunks_of(document)])
    np.testing.assert_allclose(stored, expected_vectors, atol=1e-5)
    document.refresh_from_db()
    assert document.chunks_total == document.chunks_done == len(drafts)


def test_an_extraction_error_in_the_extracting_thread_fails_the_document(collection, corpus, settings):
    import threading

    settings.KNOWLEDGE_INGEST_LIMITS = dataclasses.replace(settings.KNOWLEDGE_INGEST_LIMITS, max_chunks=5)
    document = upload(collection, corpus / "pdf" / "pasa.pdf")
    assert document.status == Document.Status.FAILED
    assert "chunks" in document.error
    assert not Chunk.objects.filter(document=document).exists()
    assert not [t for t in threading.enumerate() if t.name == "ingest-producer"]


def test_summaries_made_while_the_chunks_are_written_equal_those_made_before_writing(collection, corpus):
    """A batch of documents, one after another: each summary (made in a thread while its chunks are
    inserted, its sentences embedded in parallel) is the one made afterwards from the stored chunks,
    text and vector alike."""
    from knowledge.clients.embedding import embed_short_texts
    from knowledge.ingestion.pipeline import document_chunk_drafts
    from knowledge.ingestion.summary import summary_draft
    from knowledge.models import DocumentSummary

    names = [
        "office/dummy.docx",
        "html/flag_day.html",
        "text/bates.txt",
        "text/gravity_hill.md",
        "pdf/pasa.pdf",
    ]
    documents = [upload(collection, corpus / name) for name in names]
    for document in documents:
        assert document.status == Document.Status.READY, document.error
        vectors = np.array([chunk.embedding for chunk in chunks_of(document)], dtype=np.float32)
        drafts = document_chunk_drafts(document, collection.chunk_profile)
        expected = summary_draft(
            filename=document.filename, title=document.title, drafts=drafts, vectors=vectors
        )
        stored = DocumentSummary.objects.get(document=document)
        assert expected.method == stored.method == "extractive"
        assert (stored.document_type, stored.summary, stored.key_topics, stored.use_for, stored.note) == (
            expected.document_type,
            expected.summary,
            expected.key_topics,
            expected.use_for,
            expected.note,
        )
        assert np.array_equal(
            np.array(stored.embedding, dtype=np.float32), embed_short_texts([expected.router_text()])[0]
        )
    assert len({DocumentSummary.objects.get(document=d).summary for d in documents}) == len(documents)


def test_a_summary_that_fails_while_the_chunks_are_written_fails_the_document_and_writes_nothing(
    collection, corpus, monkeypatch
):
    import threading

    from knowledge.ingestion import pipeline
    from knowledge.models import DocumentSummary

    def refuse(texts, **kwargs):
        raise RuntimeError("the encoder is out of memory")

    monkeypatch.setattr(pipeline, "embed_short_texts", refuse)  # the summary's own vector
    with pytest.raises(RuntimeError, match="out of memory"):  # the task fails too (django-q records it)
        upload(collection, corpus / "text" / "gravity_hill.md")
    document = Document.objects.get(collection=collection, filename="gravity_hill.md")
    assert document.status == Document.Status.FAILED
    assert document.error == "processing failed: the encoder is out of memory"
    assert not Chunk.objects.filter(document=document).exists()
    assert not DocumentSummary.objects.filter(document=document).exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("summary")]
