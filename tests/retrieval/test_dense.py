"""Dense search on a real pgvector HNSW index: filters must not starve the result."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from django.db import connection

from knowledge.models import Chunk, Document
from knowledge.retrieval.dense import ScopeSize, dense_search, exact_is_cheaper, scope_size, vector_literal
from knowledge.retrieval.intent import intent_filter_sql
from knowledge.retrieval.scope import Scope, search_scope
from knowledge.services.collections import collection_create

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _fill(collection, vectors: np.ndarray, *, model: str = MODEL) -> list[int]:
    digest = hashlib.sha256(f"{collection.pk}".encode()).hexdigest()
    document = Document.objects.create(
        collection=collection,
        filename=f"{collection.name}.txt",
        content_hash=digest,
        size=1,
        file=f"x/{digest}",
        status=Document.Status.READY,
    )
    chunks = Chunk.objects.bulk_create(
        Chunk(
            document=document,
            collection=collection,
            chunk_profile=collection.chunk_profile,
            embedding_model=model,
            index=i,
            content=f"chunk {i}",
            token_count=2,
            source_ref="section=x",
            embedding=vector,
        )
        for i, vector in enumerate(vectors)
    )
    return [c.pk for c in chunks]


def _unit(rows: int, rng) -> np.ndarray:
    v = rng.normal(size=(rows, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.django_db
def test_hnsw_with_a_selective_filter_matches_exact_search(alice):
    rng = np.random.default_rng(7)
    big = collection_create(name="big", owner=alice)
    small = collection_create(name="small", owner=alice)
    _fill(big, _unit(4000, rng))
    small_ids = _fill(small, _unit(40, rng))  # 1% of the table
    scope = search_scope(user=alice, collection_ids=[small.pk])
    recalls = []
    for query in _unit(10, rng):
        approximate = dense_search(vector=query, scope=scope, limit=20, exact=False)
        exact = dense_search(vector=query, scope=scope, limit=20, exact=True)
        assert len(approximate) == 20, "the filter starved the HNSW scan"
        assert {h.chunk_id for h in approximate} <= set(small_ids)
        assert [h.distance for h in exact] == sorted(h.distance for h in exact)
        recalls.append(len({h.chunk_id for h in approximate} & {h.chunk_id for h in exact}) / 20)
    assert np.mean(recalls) >= 0.9


@pytest.mark.django_db
def test_exact_search_returns_true_nearest_neighbours(alice):
    rng = np.random.default_rng(3)
    collection = collection_create(name="c", owner=alice)
    vectors = _unit(300, rng)
    ids = _fill(collection, vectors)
    query = vectors[42] + 0.01 * _unit(1, rng)[0]
    hits = dense_search(vector=query, scope=search_scope(user=alice, collection_ids=[collection.pk]), limit=5)
    expected = np.argsort(-(vectors @ (query / np.linalg.norm(query))))[:5]
    assert [h.chunk_id for h in hits] == [ids[i] for i in expected]
    assert hits[0].chunk_id == ids[42]


@pytest.mark.django_db
def test_unreadable_collections_are_filtered_inside_the_query(alice, charlie):
    rng = np.random.default_rng(5)
    secret = collection_create(name="secret", owner=alice)
    vectors = _unit(50, rng)
    _fill(secret, vectors)
    scope = search_scope(user=charlie, collection_ids=[secret.pk])
    assert dense_search(vector=vectors[0], scope=scope, limit=10) == []
    assert dense_search(vector=vectors[0], scope=scope, limit=10, exact=False) == []


# --- plan choice ---------------------------------------------------------------


def _scope(document_ids=None):
    return Scope("SELECT 1, 1, %s", (MODEL,), MODEL, document_ids)


def test_a_small_scope_in_a_big_table_is_scanned_exactly_and_a_large_share_walks_the_graph():
    assert exact_is_cheaper(ScopeSize(rows=1_000, table=100_000), limit=50, scope=_scope())
    assert not exact_is_cheaper(ScopeSize(rows=50_000, table=100_000), limit=50, scope=_scope())
    # A single big collection is the table: the graph, however many rows (the old rule scanned 20,000).
    assert not exact_is_cheaper(ScopeSize(rows=9_605, table=9_605), limit=50, scope=_scope())
    # Tiny tables are scanned: nothing to gain from the graph.
    assert exact_is_cheaper(ScopeSize(rows=40, table=40), limit=50, scope=_scope())
    # Too thin for the iterative scan's tuple budget: scanned even when that is slow.
    assert exact_is_cheaper(ScopeSize(rows=30_000, table=100_000_000), limit=50, scope=_scope())
    # A scope narrowed to documents is always scanned (their rows are few; the counts cannot see it).
    assert exact_is_cheaper(ScopeSize(rows=50_000, table=100_000), limit=50, scope=_scope([1, 2]))


def test_connections_start_with_the_iterative_hnsw_scan(db):
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.iterative_scan")
        assert cursor.fetchone()[0] == "relaxed_order"
        cursor.execute("SHOW jit")  # no query compiles: they run in milliseconds
        assert cursor.fetchone()[0] == "off"


@pytest.mark.django_db
def _clustered(rows: int, centres: np.ndarray, rng) -> np.ndarray:
    """Unit vectors around topic centres, as embeddings of real text are (isotropic random vectors
    in 384 dimensions are all about equally far apart: no graph search finds their exact top 20)."""
    picked = centres[rng.integers(len(centres), size=rows)]
    v = picked + rng.normal(scale=0.6 / np.sqrt(384), size=picked.shape).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_the_chosen_plan_returns_the_full_k_and_the_exact_neighbours_for_small_and_large_scopes(alice):
    rng = np.random.default_rng(11)
    big = collection_create(name="big", owner=alice)
    small = collection_create(name="small", owner=alice)
    centres = _unit(60, rng)
    big_ids = _fill(big, _clustered(3000, centres, rng))
    small_ids = _fill(small, _unit(30, rng))  # 1% of the table
    small_scope = search_scope(user=alice, collection_ids=[small.pk])
    big_scope = search_scope(user=alice, collection_ids=[big.pk])
    # The sizes come from the partition counts the lexical triggers keep, not a count(*).
    assert scope_size(small_scope) == ScopeSize(rows=30, table=3030)
    assert exact_is_cheaper(scope_size(small_scope), limit=20, scope=small_scope)
    assert not exact_is_cheaper(scope_size(big_scope), limit=20, scope=big_scope)
    recalls = []
    for query in _clustered(10, centres, rng):
        small_hits = dense_search(vector=query, scope=small_scope, limit=20)
        assert small_hits == dense_search(vector=query, scope=small_scope, limit=20, exact=True)
        assert {h.chunk_id for h in small_hits} <= set(small_ids)
        big_hits = dense_search(vector=query, scope=big_scope, limit=20)
        assert len(big_hits) == 20 and {h.chunk_id for h in big_hits} <= set(big_ids)
        exact = dense_search(vector=query, scope=big_scope, limit=20, exact=True)
        recalls.append(len({h.chunk_id for h in big_hits} & {h.chunk_id for h in exact}) / 20)
    assert np.mean(recalls) >= 0.95


def _estimated_rows(cursor, condition: str) -> float:
    cursor.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM knowledge_chunk AS c WHERE true {condition}")
    return cursor.fetchone()[0][0]["Plan"]["Plan Rows"]


@pytest.mark.django_db
def test_the_planner_knows_how_many_chunks_an_intent_filter_keeps(alice):
    """Prose chunks have no metadata type, so the "endpoint" filter keeps all of them. Guessing it
    kept 0.5% made PostgreSQL sort every chunk instead of walking the HNSW index (1 s at 100,000)."""
    collection = collection_create(name="prose", owner=alice)
    rows = len(_fill(collection, _unit(2000, np.random.default_rng(3))))
    condition = intent_filter_sql("endpoint")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")
        assert _estimated_rows(cursor, condition) >= 0.9 * rows
        # What the migration's statistics change: without them the estimate is a fixed guess.
        cursor.execute("DROP STATISTICS chunk_metadata_type_stats")
        cursor.execute("ANALYZE knowledge_chunk")
        assert _estimated_rows(cursor, condition) < 0.1 * rows


def test_a_vectors_text_is_remembered_only_while_the_array_cannot_change():
    vector = np.array([0.5, -0.25, 1 / 3], dtype=np.float32)
    assert vector_literal(vector) == "[0.5,-0.25,0.3333333]"
    vector[0] = 2.0  # a writable array is formatted again each time
    assert vector_literal(vector) == "[2,-0.25,0.3333333]"
    vector.flags.writeable = False
    assert vector_literal(vector) == "[2,-0.25,0.3333333]"
    assert vector_literal(vector) is vector_literal(vector)  # formatted once
    twin = vector.copy()
    twin[1] = 1.0
    twin.flags.writeable = False
    assert vector_literal(twin) == "[2,1,0.3333333]"  # another array, its own text
    assert vector_literal([0.5, 1.0]) == "[0.5,1]"


@pytest.mark.django_db
def test_a_search_over_one_models_chunks_walks_that_models_own_graph(alice):
    """Migration 0021's partial HNSW index per model: the graph holds that model's vectors only."""
    from django.test.utils import CaptureQueriesContext

    from knowledge.clients.embedding_registry import E5_SMALL

    rng = np.random.default_rng(11)
    english = collection_create(name="english", owner=alice)
    multilingual = collection_create(name="multilingual", owner=alice, embedding_model=E5_SMALL)
    _fill(english, _unit(300, rng))
    e5_ids = set(_fill(multilingual, _unit(300, rng), model=E5_SMALL))
    scope = search_scope(user=alice, collection_ids=[english.pk, multilingual.pk]).of_model(E5_SMALL)
    with CaptureQueriesContext(connection) as queries:
        hits = dense_search(vector=_unit(1, rng)[0], scope=scope, limit=10, exact=False)
    assert {hit.chunk_id for hit in hits} <= e5_ids and len(hits) == 10
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the table is small: make the planner use an index
        cursor.execute("EXPLAIN " + queries.captured_queries[-1]["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "chunk_embedding_hnsw_e5" in plan, plan
    assert "chunk_embedding_hnsw_minilm" not in plan
