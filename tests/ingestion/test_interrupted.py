"""Stale `processing` documents (their worker died) and documents deleted while they are processed.

A dead worker is simulated by a heartbeat that stopped long ago; the test with
a real worker killed by SIGKILL is in test_pipeline.py, next to its helpers.
Deletion is tested against a real worker process (``manage.py shell``).
"""

from __future__ import annotations

import datetime
import os
import signal
import time

import pytest
from django.db.models import F
from django.utils import timezone

from knowledge.ingestion.pipeline import _heartbeat, document_chunk_drafts
from knowledge.models import Chunk, Document, DocumentSummary
from knowledge.services.collections import collection_create
from knowledge.services.documents import (
    PROCESSING_INTERRUPTED,
    DocumentUpload,
    document_delete,
    document_upload,
    documents_fail_stale,
)
from tests.ingestion.test_pipeline import _start_worker_process, _wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]


@pytest.fixture
def collection(alice):
    return collection_create(name="papers", owner=alice)


def _age_heartbeat(document: Document, seconds: int) -> None:
    """What the clock does to a dead worker's document: its last heartbeat recedes into the past."""
    Document.objects.filter(pk=document.pk).update(
        updated_at=F("updated_at") - datetime.timedelta(seconds=seconds)
    )


def test_the_pages_and_the_next_task_also_report_stale_documents(collection, corpus, client, alice):
    stale = document_upload(
        collection=collection, sync=False, upload=DocumentUpload(filename="a.txt", data=b"Alpha text.")
    ).document
    other = document_upload(
        collection=collection, sync=False, upload=DocumentUpload(filename="b.txt", data=b"Beta text.")
    ).document
    Document.objects.filter(pk__in=[stale.pk, other.pk]).update(status=Document.Status.PROCESSING)
    _age_heartbeat(stale, 3600)
    client.force_login(alice)
    rows = client.get(f"/collections/{collection.pk}/documents.json").json()["documents"]
    assert {row["id"]: row["status"] for row in rows} == {stale.pk: "failed", other.pk: "processing"}
    assert {row["id"]: row["error"] for row in rows}[stale.pk] == PROCESSING_INTERRUPTED

    # A worker starting any task sweeps too (nobody may be looking at the page).
    Document.objects.filter(pk=stale.pk).update(status=Document.Status.PROCESSING)
    _age_heartbeat(stale, 3600)
    _age_heartbeat(other, 3600)
    from knowledge.tasks import process_document

    process_document(stale.pk)
    other.refresh_from_db()
    assert (other.status, other.error) == (Document.Status.FAILED, PROCESSING_INTERRUPTED)
    stale.refresh_from_db()
    assert stale.status == Document.Status.READY, stale.error


def test_a_live_run_keeps_its_heartbeat_fresh(collection, settings):
    settings.KNOWLEDGE_PROCESSING_STALE_SECONDS = 10  # a beat every 2 seconds
    document = document_upload(
        collection=collection, sync=False, upload=DocumentUpload(filename="a.txt", data=b"Alpha text.")
    ).document
    Document.objects.filter(pk=document.pk).update(status=Document.Status.PROCESSING)
    _age_heartbeat(document, 3600)
    old = Document.objects.get(pk=document.pk).updated_at
    with _heartbeat(document.pk):
        beat = _poll(lambda: Document.objects.get(pk=document.pk).updated_at > old, seconds=30)
    assert beat, "the heartbeat never touched the document"
    assert documents_fail_stale(documents=Document.objects.filter(pk=document.pk)) == 0
    assert (
        documents_fail_stale(
            documents=Document.objects.filter(pk=document.pk),
            now=timezone.now() + datetime.timedelta(seconds=11),
        )
        == 1
    )


def test_deleting_a_document_stops_its_running_task(collection, corpus):
    data = (corpus / "text" / "obama.txt").read_bytes()  # about 1,700 chunks: minutes of embedding
    document = document_upload(
        collection=collection, sync=False, upload=DocumentUpload(filename="obama.txt", data=data)
    ).document
    # The whole document's chunk count, known before any embedding (the worker's own total only
    # counts what its extraction thread has produced so far).
    chunk_count = len(document_chunk_drafts(document, collection.chunk_profile))
    worker = _start_worker_process(document.pk)
    try:
        _wait_until(lambda: Document.objects.get(pk=document.pk).chunks_done > 0, worker)
        document_delete(document=Document.objects.get(pk=document.pk))
        _, stderr = worker.communicate(timeout=120)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    log = stderr.decode()
    assert worker.returncode == 0, log[-2000:]
    assert f"Document {document.pk} was deleted while processing; stopped after" in log, log[-2000:]
    done, _ = _stopped_after(log)
    assert done < chunk_count  # it did not embed the rest of the document
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert not DocumentSummary.objects.filter(document_id=document.pk).exists()
    assert not Document.objects.filter(pk=document.pk).exists()


def _stopped_after(log: str) -> tuple[int, int]:
    tail = log.split("stopped after ", 1)[1].split(" chunks", 1)[0]
    done, total = tail.split(" of ")
    return int(done.replace(",", "")), int(total.replace(",", ""))


def _poll(condition, *, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False
