"""Dense search on a real pgvector HNSW index: filters must not starve the result."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from knowledge.collections import collection_create
from knowledge.models import Chunk, Document
from knowledge.retrieval.dense import dense_search
from knowledge.retrieval.scope import search_scope

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _fill(collection, vectors: np.ndarray) -> list[int]:
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
            embedding_model=MODEL,
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
