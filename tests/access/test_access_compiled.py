"""The access rule's SQL is compiled once per user and ids in a process; the check itself runs every time.

Charlie asks about Alice's collection with the same ids again and again, in one
process, while she changes who may read it: each answer follows her latest change.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.base.errors import NotFoundError
from knowledge.access import question_scope_checked
from knowledge.clients import embedding
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create, collection_update
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import request_for

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


def _found(user, collection) -> list[int]:
    """The document ids a retrieve for ``user`` over ``collection`` returns (NotFound: not readable)."""
    asked = question_scope_checked(user=user, collection_ids=[collection.pk])
    return sorted(
        {
            c.chunk.document_id
            for c in retrieve(
                user=user, request=request_for(user, question=QUESTION, asked=asked)
            ).primary_chunks
        }
    )


def test_access_changes_apply_to_the_next_question_with_the_same_ids(alice, charlie, corpus):
    collection = collection_create(name="alice hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    ).document
    assert _found(alice, collection) == [document.pk]
    with pytest.raises(NotFoundError):
        _found(charlie, collection)

    collection_update(collection=collection, visibility="public")
    assert _found(charlie, collection) == [document.pk]

    collection_update(collection=collection, visibility="private")
    with pytest.raises(NotFoundError):
        _found(charlie, collection)
    assert _found(alice, collection) == [document.pk]


def test_a_search_reads_its_collections_once_with_the_access_check(alice, corpus):
    """The access check reads each collection's serving chunk set; the search pins those instead of
    reading the same rows again (one statement a search fewer)."""
    collection = collection_create(name="alice hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    asked = question_scope_checked(user=alice, collection_ids=[collection.pk])
    collection.refresh_from_db()
    assert asked.chunk_sets == ((collection.pk, collection.chunk_profile_id, collection.embedding_model),)
    with CaptureQueriesContext(connection) as statements:
        context = retrieve(user=alice, request=request_for(alice, question=QUESTION, asked=asked))
    assert context.primary_chunks
    assert not [s["sql"] for s in statements.captured_queries if 'FROM "knowledge_collection"' in s["sql"]]


def test_an_encoder_is_loaded_once_when_many_threads_ask_first(monkeypatch):
    loads = []

    def slow_load(backend, *, threads=0):
        loads.append((backend, threads))
        threading.Event().wait(0.2)  # long enough for every thread to ask meanwhile
        return object()

    monkeypatch.setattr(embedding, "_models", {})
    monkeypatch.setattr(embedding, "_load", slow_load)
    models = []
    threads = [
        threading.Thread(target=lambda: models.append(embedding.query_model("onnx"))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [("onnx", embedding.QUERY_THREADS)]
    assert len({id(model) for model in models}) == 1


def test_short_texts_keep_their_order_and_match_one_by_one_encoding():
    texts = ["a much longer sentence about gravity hills and cars rolling uphill", "short", "a medium text"]
    vectors = embedding.embed_short_texts(texts)
    model = embedding.get_model("onnx")
    for text, vector in zip(texts, vectors, strict=True):
        single = model.encode([text], normalize_embeddings=True)[0]
        assert float(vector @ single) > 0.9999
