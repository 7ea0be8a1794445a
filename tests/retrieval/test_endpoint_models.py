"""A collection embedded by the operator's endpoint: registered, ingested, searched, and its faults.

The endpoint is a real HTTP server on 127.0.0.1 (tests/model_server.py) serving a real
768-dimension model (all-mpnet-base-v2) over OpenAI's /embeddings; the product talks to it with
the real ``openai`` client. Real documents of the shared corpus, the real pipeline and retrieve()
on PostgreSQL with pgvector.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from django.db import connection

from config.base.errors import KnowledgeError
from knowledge.clients.embedding_registry import MINILM, embedding_model_info
from knowledge.models import Chunk, Collection, Document, EmbeddingEndpoint
from knowledge.retrieval import dense
from knowledge.retrieval.answerability import embedding_reads, question_language
from knowledge.retrieval.scope import Scope
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.services.model_endpoints import (
    embedding_endpoint_delete,
    embedding_endpoint_save,
    endpoint_index_ensure,
)
from tests.asking import request_for
from tests.model_server import Reply
from tests.retrieval.test_embedding_models import answers_while_switching, steady_answers

pytest_plugins = ["tests.model_server"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("endpoint_indexes_dropped")]

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
GRAVITY_HILL = CORPUS / "text" / "gravity_hill.md"
DOCX = CORPUS / "office" / "dummy.docx"
SECRET = "sk-endpoint-secret-7f3a9c"
ENDPOINT = "local/all-mpnet-base-v2"
UPHILL = "Why do cars appear to roll uphill on a gravity hill?"


def register(server, **fields) -> EmbeddingEndpoint:
    values = {"name": ENDPOINT, "base_url": server.base_url, "model": server.model_name, **fields}
    return embedding_endpoint_save(EmbeddingEndpoint(**values))


def upload(collection: Collection, path: Path) -> Document:
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    return Document.objects.get(pk=result.document.pk)


def index_definitions() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk'")
        return [row[0] for row in cursor.fetchall()]


def test_a_768_dimension_endpoint_model_is_registered_ingests_and_answers(alice, mpnet_server):
    endpoint = register(mpnet_server, api_key=SECRET, batch_size=4)
    assert endpoint.dimensions == 768
    assert embedding_model_info(ENDPOINT).dimensions == 768
    [definition] = [d for d in index_definitions() if f"'{ENDPOINT}'" in d]
    assert "USING hnsw (((embedding)::vector(768)) vector_cosine_ops)" in definition
    # Registration asked once, with the key as a bearer token.
    assert mpnet_server.requests[-1].authorization == f"Bearer {SECRET}"

    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    document = upload(collection, GRAVITY_HILL)
    assert document.status == Document.Status.READY, document.error
    chunk = Chunk.objects.filter(document=document).first()
    assert chunk.embedding_model == ENDPOINT and len(chunk.embedding) == 768
    # The stored vector is the served model's own (unit length, as sent).
    expected = mpnet_server.encode([mpnet_server.requests[-1].body["input"][-1]])[0]
    assert expected.shape == (768,)
    assert all(len(r.body["input"]) <= 4 for r in mpnet_server.requests[1:]), "batch_size not kept"

    context = retrieve(
        user=alice, request=request_for(alice, question=UPHILL, collection_ids=[collection.pk], k=3)
    )
    assert context.primary_chunks, context.stats
    assert {c.chunk.embedding_model for c in context.primary_chunks} == {ENDPOINT}
    assert context.primary_chunks[0].scores["dense_rank"] is not None
    assert "gravity hill" in context.primary_chunks[0].chunk.content.lower()
    assert "embedding_unavailable" not in context.stats


def test_the_endpoint_models_graph_serves_its_hnsw_search(alice, mpnet_server):
    register(mpnet_server)
    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    assert upload(collection, GRAVITY_HILL).status == Document.Status.READY
    vector = np.asarray(mpnet_server.encode([UPHILL])[0])
    scope = Scope.of_chunk_sets([(collection.pk, collection.chunk_profile_id, ENDPOINT)]).of_model(ENDPOINT)
    by_graph = dense.dense_search(vector=vector, scope=scope, limit=3, exact=False)
    by_scan = dense.dense_search(vector=vector, scope=scope, limit=3, exact=True)
    assert [h.chunk_id for h in by_graph] == [h.chunk_id for h in by_scan]
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute(
            "EXPLAIN SELECT id FROM knowledge_chunk c WHERE c.embedding_model = %s "
            "ORDER BY (c.embedding::vector(768)) <=> %s::vector(768) LIMIT 3",
            [ENDPOINT, dense.vector_literal(vector)],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    endpoint = EmbeddingEndpoint.objects.get(name=ENDPOINT)
    assert f"chunk_embedding_hnsw_ep{endpoint.pk}" in plan, plan


def test_one_question_searches_a_minilm_and_a_768_dimension_collection_together(alice, mpnet_server):
    register(mpnet_server)
    minilm = collection_create(name="minilm", owner=alice)
    mpnet = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    assert upload(minilm, DOCX).status == Document.Status.READY
    assert upload(mpnet, GRAVITY_HILL).status == Document.Status.READY
    question = "How does hybrid search help retrieval, and why do cars roll uphill on a gravity hill?"
    context = retrieve(
        user=alice, request=request_for(alice, question=question, collection_ids=[minilm.pk, mpnet.pk], k=10)
    )
    models = {c.chunk.embedding_model for c in context.primary_chunks}
    assert models == {MINILM, ENDPOINT}
    # Fused by rank: each model's nearest chunk takes one of the first two dense ranks.
    first = {c.chunk.embedding_model for c in context.primary_chunks if c.scores["dense_rank"] in (1, 2)}
    assert first == {MINILM, ENDPOINT}


def test_a_failing_endpoint_answers_by_the_lexical_search_and_says_why(alice, mpnet_server):
    register(mpnet_server)
    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    assert upload(collection, GRAVITY_HILL).status == Document.Status.READY
    mpnet_server.stop()
    context = retrieve(
        user=alice,
        request=request_for(alice, question="gravity hill optical illusion", collection_ids=[collection.pk]),
    )
    assert "unreachable" in context.stats["embedding_unavailable"][ENDPOINT]
    assert context.stats["search"] == "lexical only: the embedding endpoint failed"
    assert context.primary_chunks, "the lexical search found nothing"
    assert all(c.scores["dense_rank"] is None for c in context.primary_chunks)
    assert "gravity hill" in context.primary_chunks[0].chunk.content.lower()


@pytest.mark.parametrize(
    ("replies", "reason"),
    [
        (
            [Reply(dimensions=384)] * 4,
            "returned vectors of 384 dimensions; local/all-mpnet-base-v2 is registered with 768",
        ),
        ([Reply(status=429, retry_after="0")] * 4, "answered HTTP 429"),
        ([Reply(body=b"{not json")] * 4, "not embeddings"),
        ([Reply(count=1)] * 4, "vectors for"),
    ],
    ids=["wrong-dimension", "rate-limited", "malformed", "too-few"],
)
def test_an_endpoint_fault_fails_the_document_with_the_reason(alice, mpnet_server, replies, reason):
    register(mpnet_server, max_retries=1, batch_size=64)
    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    mpnet_server.script(*replies)
    document = upload(collection, GRAVITY_HILL)
    assert document.status == Document.Status.FAILED
    assert reason in document.error, document.error
    assert not Chunk.objects.filter(document=document).exists()


def test_a_rate_limited_endpoint_is_retried_and_the_document_is_ready(alice, mpnet_server):
    register(mpnet_server, max_retries=3)
    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    mpnet_server.script(Reply(status=429, retry_after="0"), Reply(status=503, retry_after="0"))
    document = upload(collection, GRAVITY_HILL)
    assert document.status == Document.Status.READY, document.error
    statuses = [r.path for r in mpnet_server.requests]
    assert len(statuses) >= 4  # the registration, two refused, then the accepted ones


def test_an_endpoint_stopped_mid_ingest_fails_the_document_and_keeps_nothing_half_written(
    alice, mpnet_server
):
    register(mpnet_server, batch_size=1, max_retries=1)
    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    mpnet_server.default = Reply(delay=0.2)  # each passage takes a while: the stop lands mid-document
    # The registration's request, then two of the document's passages (it has more, or it would be ready).
    stopper = threading.Thread(target=_stop_after, args=(mpnet_server, 3), daemon=True)
    stopper.start()
    document = upload(collection, GRAVITY_HILL)
    stopper.join(timeout=60)
    assert len(mpnet_server.requests) == 3
    assert document.status == Document.Status.FAILED
    assert "unreachable" in document.error, document.error
    assert not Chunk.objects.filter(document=document).exists()


def _stop_after(server, requests: int, timeout: float = 60.0) -> None:
    """Stop ``server`` once it has received ``requests`` requests (the registration's among them)."""
    deadline = time.monotonic() + timeout
    while len(server.requests) < requests and time.monotonic() < deadline:
        time.sleep(0.01)
    server.stop()


def test_a_slow_endpoint_times_out_and_the_document_fails(alice, mpnet_server):
    endpoint = register(mpnet_server, max_retries=0)
    # Registered with room to answer; only the document's requests are meant to run out of time.
    EmbeddingEndpoint.objects.filter(pk=endpoint.pk).update(timeout_seconds=1)
    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    mpnet_server.script(Reply(delay=5))
    document = upload(collection, GRAVITY_HILL)
    assert document.status == Document.Status.FAILED
    assert "did not answer within 1" in document.error, document.error


def test_a_registration_the_endpoint_cannot_answer_is_refused_and_nothing_is_stored(mpnet_server):
    mpnet_server.stop()
    with pytest.raises(KnowledgeError, match="unreachable"):
        register(mpnet_server)
    assert not EmbeddingEndpoint.objects.exists()
    assert not [d for d in index_definitions() if f"'{ENDPOINT}'" in d]


def test_an_endpoint_in_use_cannot_be_deleted_or_change_dimension(alice, mpnet_server):
    endpoint = register(mpnet_server)
    collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    with pytest.raises(KnowledgeError, match="still embeds"):
        embedding_endpoint_delete(endpoint)
    mpnet_server.script(Reply(dimensions=512))
    with pytest.raises(KnowledgeError, match="now returns 512 dimensions"):
        embedding_endpoint_save(endpoint)
    assert EmbeddingEndpoint.objects.get(pk=endpoint.pk).dimensions == 768


def test_an_unused_endpoint_is_deleted_with_its_index(mpnet_server):
    endpoint = register(mpnet_server)
    embedding_endpoint_delete(endpoint)
    assert not EmbeddingEndpoint.objects.exists()
    assert not [d for d in index_definitions() if f"'{ENDPOINT}'" in d]


def test_the_key_never_reaches_the_logs(alice, mpnet_server, caplog):
    caplog.set_level(logging.DEBUG)
    register(mpnet_server, api_key=SECRET, max_retries=0)
    collection = collection_create(name="mpnet", owner=alice, embedding_model=ENDPOINT)
    mpnet_server.script(Reply(status=401, error_message="bad key"))
    document = upload(collection, GRAVITY_HILL)
    assert document.status == Document.Status.FAILED
    mpnet_server.stop()
    retrieve(user=alice, request=request_for(alice, question=UPHILL, collection_ids=[collection.pk]))
    assert SECRET not in caplog.text
    assert SECRET not in document.error
    assert SECRET not in repr(embedding_model_info(ENDPOINT))


def test_a_collection_moves_onto_the_endpoint_model_while_questions_keep_being_answered(alice, mpnet_server):
    register(mpnet_server)
    collection = collection_create(name="switching", owner=alice)
    for path in (DOCX, GRAVITY_HILL):
        assert upload(collection, path).status == Document.Status.READY
    asker = answers_while_switching(alice, collection, ENDPOINT, UPHILL)
    steady_answers(asker)
    assert asker.answers[0][2] == {MINILM} and asker.answers[-1][2] == {ENDPOINT}


def test_a_model_above_2000_dimensions_gets_a_half_precision_graph_its_search_walks(alice):
    """No real model of 3,072 dimensions runs here: the endpoint row is written as a registration
    would leave it, its chunks' vectors are random, and PostgreSQL builds and walks the graph."""
    endpoint = EmbeddingEndpoint.objects.create(
        name="openai/text-embedding-3-large", base_url="http://127.0.0.1:9/v1", model="m", dimensions=3072
    )
    endpoint_index_ensure(endpoint)
    [definition] = [d for d in index_definitions() if "'openai/text-embedding-3-large'" in d]
    assert "USING hnsw (((embedding)::halfvec(3072)) halfvec_cosine_ops)" in definition
    collection = collection_create(name="large", owner=alice, embedding_model=endpoint.name)
    document = Document.objects.create(
        collection=collection, filename="a.txt", content_hash="0" * 64, size=1, status=Document.Status.READY
    )
    vectors = np.random.default_rng(3).standard_normal((20, 3072)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    Chunk.objects.bulk_create(
        Chunk(
            document=document,
            collection=collection,
            chunk_profile=collection.chunk_profile,
            embedding_model=endpoint.name,
            index=i,
            content=f"chunk {i}",
            token_count=2,
            source_ref=f"section={i}",
            embedding=vector.tolist(),
        )
        for i, vector in enumerate(vectors)
    )
    scope = Scope.of_chunk_sets([(collection.pk, collection.chunk_profile_id, endpoint.name)])
    scope = scope.of_model(endpoint.name)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        hits = dense.dense_search(vector=vectors[7], scope=scope, limit=3, exact=False)
        cursor.execute(
            "EXPLAIN SELECT id FROM knowledge_chunk c WHERE c.embedding_model = %s "
            "ORDER BY (c.embedding::halfvec(3072)) <=> %s::halfvec(3072) LIMIT 3",
            [endpoint.name, dense.vector_literal(vectors[7])],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert f"chunk_embedding_hnsw_ep{endpoint.pk}" in plan, plan
    assert hits[0].chunk_id == Chunk.objects.get(document=document, index=7).pk
    assert hits[0].distance == pytest.approx(0.0, abs=1e-2)  # half precision: close, not exact
    assert dense.indexed_type(endpoint.name) == "halfvec(3072)"


def test_an_endpoint_reads_other_languages_only_when_registered_multilingual():
    """The verdict's language tests follow the flag the operator set (bundled models carry theirs)."""
    common = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "dimensions": 768}
    EmbeddingEndpoint.objects.create(name="ollama/english", **common)
    EmbeddingEndpoint.objects.create(name="ollama/bge-m3", multilingual=True, **common)
    japanese = "ハイブリッド検索はなぜ重要ですか"
    assert not embedding_reads(japanese, embedding_model="ollama/english")
    assert embedding_reads(japanese, embedding_model="ollama/bge-m3")
    assert embedding_reads("Why does hybrid search matter?", embedding_model="ollama/english")
    assert question_language("Warum ist hybride Suche wichtig?", models=("ollama/english",)) == ("de", True)
    assert question_language("Warum ist hybride Suche wichtig?", models=("ollama/bge-m3",))[1] is False
