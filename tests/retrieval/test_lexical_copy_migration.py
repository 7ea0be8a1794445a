"""Migrations 0015 and 0016 on existing chunks: the lexical copy is filled, rebuilt with the scope
columns, and taken back step by step."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from knowledge.models import Chunk, ChunkProfile
from tests.retrieval.test_lexical import (
    IN_SCOPE_FILES,
    add_chunks,
    assert_lexical_copy_is_exact,
    chunk_texts,
    make_collection,
    search,
)

BEFORE = [("knowledge", "0014_spread_sources_and_semantic_weight")]
AFTER = [("knowledge", "0015_chunk_lexical")]


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _copy_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('knowledge_chunk_lexical') IS NOT NULL")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_existing_chunks_are_copied_and_the_copy_goes_on_the_way_back():
    profile = ChunkProfile.objects.create(name="lexical-migration", chunk_size=1000, chunk_overlap=100)
    collection = make_collection("lexical-migration", profile)
    ids = add_chunks(collection, chunk_texts(IN_SCOPE_FILES[:2]))
    try:
        _migrate(BEFORE)
        assert not _copy_exists()
        # Written while the copy does not exist: no trigger may be left behind to fail on it.
        Chunk.objects.filter(pk=ids[0]).delete()
        _migrate(AFTER)
    finally:
        _migrate_to_latest()
    assert _copy_exists()
    assert_lexical_copy_is_exact()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk_lexical")
        assert cursor.fetchone()[0] == len(ids) - 1
    hits = search("How do I follow a relationship backward in a query?", collection, limit=5)
    assert len(hits) == 5 and all(hit.chunk_id in ids[1:] for hit in hits)


def _copy_columns() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'knowledge_chunk_lexical' ORDER BY ordinal_position"
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_the_copy_gains_the_scope_columns_and_loses_them_on_the_way_back():
    """0016 rebuilds the copy with the columns a scope names; back at 0015 it is the narrow copy
    again, kept in step by 0015's triggers, and forward again it is exact."""
    profile = ChunkProfile.objects.create(name="lexical-scope-columns", chunk_size=1000, chunk_overlap=100)
    collection = make_collection("lexical-scope-columns", profile)
    ids = add_chunks(collection, chunk_texts(IN_SCOPE_FILES[:2]))
    try:
        _migrate(AFTER)
        assert _copy_columns() == ["chunk_id", "length", "search_vector"]
        Chunk.objects.filter(pk=ids[0]).delete()  # 0015's trigger, on 0015's table
    finally:
        _migrate_to_latest()
    assert _copy_columns() == [
        "chunk_id",
        "collection_id",
        "chunk_profile_id",
        "document_id",
        "embedding_model",
        "metadata",
        "length",
        "search_vector",
    ]
    assert_lexical_copy_is_exact()
    hits = search("How do I follow a relationship backward in a query?", collection, limit=5)
    assert len(hits) == 5 and all(hit.chunk_id in ids[1:] for hit in hits)
