"""The migrations build the schema on a real PostgreSQL with pgvector."""

from __future__ import annotations

from django.db import connection

from knowledge.clients.embedding_registry import EMBEDDING_MODELS
from knowledge.models import ChunkProfile


def _fetch(sql: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def test_vector_extension_is_installed_at_a_supported_version(db):
    rows = _fetch("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    assert rows, "the vector extension is missing"
    major, minor = (int(part) for part in rows[0][0].split(".")[:2])
    assert (major, minor) >= (0, 7)


def test_chunk_embedding_has_an_hnsw_cosine_index_per_embedding_model(db):
    """One partial graph per bundled model (migrations 0021, 0039), on the column cast to the
    model's dimension, none over every vector."""
    rows = _fetch("SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk'")
    hnsw = [row[0] for row in rows if "USING hnsw" in row[0]]
    assert len(hnsw) == len(EMBEDDING_MODELS)
    for model, info in EMBEDDING_MODELS.items():
        [definition] = [d for d in hnsw if f"'{model}'" in d]
        assert f"((embedding)::vector({info.dimensions})) vector_cosine_ops)" in definition
        assert f"WHERE ((embedding_model)::text = '{model}'::text)" in definition
        # Built at 64 the graph left near-identical chunks' regions unreachable (migration 0021).
        assert "ef_construction='200'" in definition


def test_chunk_embedding_column_takes_any_dimension(db):
    """Endpoint models bring their own dimension (768, 1,536 ...): the column has none; each
    model's index casts it to that model's (migration 0039)."""
    rows = _fetch(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'knowledge_chunk'::regclass AND attname = 'embedding'"
    )
    assert rows == [("vector",)]
    assert {model.dimensions for model in EMBEDDING_MODELS.values()} == {384, 768}


def test_full_text_column_is_generated_and_its_copy_gin_indexed(db):
    """The lexical search reads the copy (migration 0016): the GIN index is there, not on the chunk table."""
    rows = _fetch("SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk_lexical'")
    assert any("USING gin (search_vector)" in row[0] for row in rows)
    rows = _fetch("SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk'")
    assert not any("USING gin" in row[0] for row in rows)
    generated = _fetch(
        "SELECT generation_expression FROM information_schema.columns "
        "WHERE table_name = 'knowledge_chunk' AND column_name = 'search_vector'"
    )
    # The 'english' lexemes plus CJK bigrams (migration 0019), a function the search calls too.
    assert generated and "knowledge_search_vector(content)" in generated[0][0]
    body = _fetch("SELECT prosrc, provolatile FROM pg_proc WHERE proname = 'knowledge_search_vector'")
    assert body and "to_tsvector('english'::regconfig" in body[0][0] and body[0][1] == "i"


def test_a_default_chunk_profile_is_active(db):
    active = ChunkProfile.objects.get(is_active=True)
    assert (active.strategy, active.chunk_size, active.chunk_overlap) == ("paragraph", 1000, 200)
