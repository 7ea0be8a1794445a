"""The question is embedded on a thread of its own while the lexical search runs.

That thread only computes (no database connection), so the overlapped
retrieval must return exactly what the sequential one returns, open no
connection, and fall back to embedding inline when its threads are busy.
"""

from __future__ import annotations

import pytest
from django.db import connection

from knowledge.clients.embedding import query_cache_clear
from knowledge.ingestion.pipeline import document_process
from knowledge.models import Document
from knowledge.retrieval import service
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import request_for

QUESTIONS = [
    "How do I delete a pet by its id?",
    "What is a gravity hill and why do cars seem to roll uphill?",
    "Which fields does a new pet need?",
    "optical illusion of a slope",
]


@pytest.fixture
def collection(alice, corpus):
    collection = collection_create(name="mixed", owner=alice)
    for path in (corpus / "text" / "gravity_hill.md", corpus / "openapi" / "petstore-expanded-3.0.json"):
        result = document_upload(
            collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
        )
        assert Document.objects.get(pk=result.document.pk).status == Document.Status.READY
    return collection


def _run(alice, collection, question, *, alongside: bool, monkeypatch):
    monkeypatch.setattr(service, "EMBED_ALONGSIDE_LEXICAL", alongside)
    query_cache_clear()  # the embedding really runs, on the thread being tested
    context = retrieve(
        user=alice, request=request_for(alice, question=question, collection_ids=[collection.pk])
    )
    return context


def _outcome(context) -> list:
    chunks = [(r.chunk.pk, r.scores) for r in context.primary_chunks]
    return [chunks, [r.chunk.pk for r in context.referenced_chunks], context.context_text, context.stats]


@pytest.mark.django_db(transaction=True)
def test_overlapped_retrieval_returns_exactly_the_sequential_result(alice, collection, monkeypatch):
    for question in QUESTIONS:
        sequential = _run(alice, collection, question, alongside=False, monkeypatch=monkeypatch)
        overlapped = _run(alice, collection, question, alongside=True, monkeypatch=monkeypatch)
        assert sequential.primary_chunks, question
        assert _outcome(overlapped) == _outcome(sequential), question
        assert {"embed", "embed_wait", "lexical", "dense"} <= set(overlapped.timings_ms)
        assert "embed_wait" not in sequential.timings_ms


def _connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend'"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_the_embedding_threads_open_no_database_connection(alice, collection, monkeypatch):
    before = _connections()
    for question in QUESTIONS * 3:
        _run(alice, collection, question, alongside=True, monkeypatch=monkeypatch)
    # At most as many: a connection an earlier test's thread still held may close meanwhile (a full
    # run once counted 1 after 2), but a thread that opened one would keep it and raise the count.
    assert _connections() <= before


def test_a_retrieval_inside_a_transaction_sees_its_uncommitted_rows(db, alice, corpus, monkeypatch):
    # The test's own transaction holds the documents: only one connection can see them.
    collection = collection_create(name="fresh", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    document_process(document_id=result.document.pk)  # on_commit never comes inside the test's transaction
    context = _run(alice, collection, QUESTIONS[1], alongside=True, monkeypatch=monkeypatch)
    assert context.primary_chunks and context.primary_chunks[0].chunk.document.filename == path.name


def test_with_every_thread_busy_the_question_is_embedded_inline(db, alice, corpus, monkeypatch):
    collection = collection_create(name="busy", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    document_process(document_id=result.document.pk)  # on_commit never comes inside the test's transaction
    _, slots = service._embedding_pool()
    taken = 0
    while slots.acquire(blocking=False):
        taken += 1
    try:
        context = _run(alice, collection, QUESTIONS[1], alongside=True, monkeypatch=monkeypatch)
    finally:
        for _ in range(taken):
            slots.release()
    assert taken == service.EMBEDDING_THREADS
    assert "embed" in context.timings_ms and "embed_wait" not in context.timings_ms
    assert context.primary_chunks
