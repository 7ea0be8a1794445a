"""Migration 0019 on existing chunks: their vectors gain the CJK bigrams, the lexical copy and the
statistics follow, and the way back restores the English-only vectors."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from knowledge.models import ChunkProfile
from tests.retrieval.test_cjk_search import sections
from tests.retrieval.test_lexical import (
    IN_SCOPE_FILES,
    add_chunks,
    assert_lexical_copy_is_exact,
    assert_statistics_are_exact,
    chunk_texts,
    make_collection,
    search,
)

BEFORE = [("knowledge", "0018_query_intent_and_semantic_weight")]


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _matching(tsquery: str) -> list[int]:
    """The chunks of the lexical copy (what the search reads) matching ``tsquery``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_id FROM knowledge_chunk_lexical WHERE search_vector @@ %s::tsquery ORDER BY 1",
            [tsquery],
        )
        return [row[0] for row in cursor.fetchall()]


def _english_only_vectors() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT bool_and(search_vector = to_tsvector('english', content)) FROM knowledge_chunk"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_existing_japanese_chunks_become_findable_and_the_way_back_restores_them():
    profile = ChunkProfile.objects.create(name="cjk-migration", chunk_size=1000, chunk_overlap=100)
    collection = make_collection("cjk-migration", profile)
    japanese = list(sections().values())
    english = chunk_texts(IN_SCOPE_FILES[:1])
    ids = add_chunks(collection, japanese + english)
    question = "ハイブリッド検索"
    try:
        _migrate(BEFORE)
        assert _english_only_vectors()
        assert_statistics_are_exact()
        assert_lexical_copy_is_exact()
        before = _matching("'ハイ' & 'ブリ'")
        english_before = _matching("'relationship' | 'follow'")
    finally:
        _migrate_to_latest()
    assert before == [] and _matching("'ハイ' & 'ブリ'")
    assert not _english_only_vectors()
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()
    holding = [chunk_id for chunk_id, text in zip(ids, japanese, strict=False) if question in text]
    assert holding and [hit.chunk_id for hit in search(question, collection)][: len(holding)] == holding
    assert _matching("'relationship' | 'follow'") == english_before != []
