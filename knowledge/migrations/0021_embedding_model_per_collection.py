"""An embedding model per collection: the chunk sets, the HNSW graphs and the BM25 statistics per model.

A collection chooses its model (MiniLM by default, or multilingual-e5-small); a
change re-embeds every document while the old vectors keep serving
(``pending_embedding_model``, like ``pending_chunk_profile``). Meanwhile a
document holds two chunk sets under the same chunk profile, so:

- ``one_chunk_per_position`` takes the model into its key;
- the one HNSW graph over every vector becomes one partial graph per model
  (``WHERE embedding_model = '...'``): a search over one model's chunks walks
  only vectors its question vector can be compared with. The graphs are built
  with ef_construction 200, not 64: over 25,500 corpus chunks a graph built at 64
  left some questions' nearest chunks unreachable (knowledge.models.documents,
  HNSW_EF_CONSTRUCTION), and with maintenance memory enough to build them in memory
  (SET LOCAL: for this migration's transaction only);
- the lexical statistics of 0004, kept per (collection, chunk profile), are
  kept per (collection, chunk profile, model): the two sets of a re-embed hold
  the same words, and counting both would double every document frequency
  while the search reads only one of them.
"""

from importlib import import_module

import pgvector.django.indexes
from django.db import migrations, models

statistics = import_module("knowledge.migrations.0004_lexical")

CREATE_TABLES = [
    """
    CREATE TABLE knowledge_lexical_partition (
        collection_id bigint NOT NULL,
        chunk_profile_id bigint NOT NULL,
        embedding_model varchar(200) NOT NULL,
        chunks bigint NOT NULL,
        tokens bigint NOT NULL,
        PRIMARY KEY (collection_id, chunk_profile_id, embedding_model)
    )
    """,
    """
    CREATE TABLE knowledge_lexical_term (
        collection_id bigint NOT NULL,
        chunk_profile_id bigint NOT NULL,
        embedding_model varchar(200) NOT NULL,
        lexeme text NOT NULL,
        chunks bigint NOT NULL,
        PRIMARY KEY (collection_id, chunk_profile_id, embedding_model, lexeme)
    )
    """,
]

# 0004's function with the model in the partition key (its comments explain the rest).
COUNT_FUNCTION = r"""
CREATE OR REPLACE FUNCTION knowledge_lexical_count() RETURNS trigger
LANGUAGE plpgsql AS $function$
DECLARE
    changed CONSTANT text := '(SELECT %1$s.* FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id'
        ' WHERE (o.collection_id, o.chunk_profile_id, o.embedding_model, o.search_vector)'
        ' IS DISTINCT FROM (n.collection_id, n.chunk_profile_id, n.embedding_model, n.search_vector))';
    sources text[];
    signs int[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        sources := ARRAY['new_rows']; signs := ARRAY[1];
    ELSIF TG_OP = 'DELETE' THEN
        sources := ARRAY['old_rows']; signs := ARRAY[-1];
    ELSE
        sources := ARRAY[format(changed, 'o'), format(changed, 'n')]; signs := ARRAY[-1, 1];
    END IF;
    FOR i IN 1 .. cardinality(sources) LOOP
        EXECUTE format($sql$
            SELECT pg_advisory_xact_lock(hashtext('knowledge_lexical'), mod(r.collection_id, 2147483647)::int)
            FROM (SELECT DISTINCT collection_id FROM %1$s AS s ORDER BY 1) AS r
        $sql$, sources[i]);
        EXECUTE format($sql$
            INSERT INTO knowledge_lexical_partition AS p
                (collection_id, chunk_profile_id, embedding_model, chunks, tokens)
            SELECT r.collection_id, r.chunk_profile_id, r.embedding_model,
                $1 * count(*), $1 * coalesce(sum(l.tokens), 0)
            FROM %1$s AS r
            CROSS JOIN LATERAL (
                SELECT sum(cardinality(u.positions)) AS tokens FROM unnest(r.search_vector) AS u
            ) AS l
            GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (collection_id, chunk_profile_id, embedding_model) DO UPDATE
            SET chunks = p.chunks + excluded.chunks, tokens = p.tokens + excluded.tokens
        $sql$, sources[i]) USING signs[i];
        EXECUTE format($sql$
            INSERT INTO knowledge_lexical_term AS t
                (collection_id, chunk_profile_id, embedding_model, lexeme, chunks)
            SELECT r.collection_id, r.chunk_profile_id, r.embedding_model, u.lexeme, $1 * count(*)
            FROM %1$s AS r CROSS JOIN LATERAL unnest(r.search_vector) AS u
            GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
            ON CONFLICT (collection_id, chunk_profile_id, embedding_model, lexeme) DO UPDATE
            SET chunks = t.chunks + excluded.chunks
        $sql$, sources[i]) USING signs[i];
    END LOOP;
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM knowledge_lexical_term AS t USING knowledge_lexical_partition AS p
        WHERE p.chunks <= 0 AND t.collection_id = p.collection_id
          AND t.chunk_profile_id = p.chunk_profile_id AND t.embedding_model = p.embedding_model;
        DELETE FROM knowledge_lexical_partition WHERE chunks <= 0;
    END IF;
    RETURN NULL;
END
$function$
"""

BACKFILL = [
    """
    INSERT INTO knowledge_lexical_partition (collection_id, chunk_profile_id, embedding_model, chunks, tokens)
    SELECT c.collection_id, c.chunk_profile_id, c.embedding_model, count(*), coalesce(sum(l.tokens), 0)
    FROM knowledge_chunk AS c
    CROSS JOIN LATERAL (
        SELECT sum(cardinality(u.positions)) AS tokens FROM unnest(c.search_vector) AS u
    ) AS l
    GROUP BY 1, 2, 3
    """,
    """
    INSERT INTO knowledge_lexical_term (collection_id, chunk_profile_id, embedding_model, lexeme, chunks)
    SELECT c.collection_id, c.chunk_profile_id, c.embedding_model, u.lexeme, count(*)
    FROM knowledge_chunk AS c CROSS JOIN LATERAL unnest(c.search_vector) AS u
    GROUP BY 1, 2, 3, 4
    """,
    "ANALYZE knowledge_lexical_term",
    "ANALYZE knowledge_lexical_partition",
]

# The lock keeps writers out until the tables, their function and their contents agree.
_DROP_TABLES = ["DROP TABLE knowledge_lexical_term", "DROP TABLE knowledge_lexical_partition"]
PER_MODEL_STATISTICS = [
    "LOCK TABLE knowledge_chunk IN SHARE ROW EXCLUSIVE MODE",
    *_DROP_TABLES,
    *CREATE_TABLES,
    COUNT_FUNCTION,
    *BACKFILL,
]
PER_PROFILE_STATISTICS = [
    "LOCK TABLE knowledge_chunk IN SHARE ROW EXCLUSIVE MODE",
    *_DROP_TABLES,
    *statistics.CREATE_TABLES,
    statistics.COUNT_FUNCTION.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
    *statistics.BACKFILL[1:],
]


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0020_score_fusion"),
    ]

    operations = [
        migrations.RunSQL("SET LOCAL maintenance_work_mem = '512MB'", reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveConstraint(
            model_name="chunk",
            name="one_chunk_per_position",
        ),
        migrations.RemoveIndex(
            model_name="chunk",
            name="chunk_embedding_hnsw",
        ),
        migrations.AddField(
            model_name="collection",
            name="pending_embedding_model",
            field=models.CharField(
                blank=True,
                default="",
                help_text="A re-embed in progress: becomes the model once every document has its new vectors.",
                max_length=200,
            ),
        ),
        migrations.AlterField(
            model_name="collection",
            name="embedding_model",
            field=models.CharField(
                help_text="The model whose vectors are searched; re-index to change it.", max_length=200
            ),
        ),
        migrations.AddIndex(
            model_name="chunk",
            index=pgvector.django.indexes.HnswIndex(
                condition=models.Q(("embedding_model", "sentence-transformers/all-MiniLM-L6-v2")),
                ef_construction=200,
                fields=["embedding"],
                m=16,
                name="chunk_embedding_hnsw_minilm",
                opclasses=["vector_cosine_ops"],
            ),
        ),
        migrations.AddIndex(
            model_name="chunk",
            index=pgvector.django.indexes.HnswIndex(
                condition=models.Q(("embedding_model", "intfloat/multilingual-e5-small")),
                ef_construction=200,
                fields=["embedding"],
                m=16,
                name="chunk_embedding_hnsw_e5",
                opclasses=["vector_cosine_ops"],
            ),
        ),
        migrations.AddConstraint(
            model_name="chunk",
            constraint=models.UniqueConstraint(
                fields=("document", "chunk_profile", "embedding_model", "index"),
                name="one_chunk_per_position",
            ),
        ),
        migrations.RunSQL(sql=PER_MODEL_STATISTICS, reverse_sql=PER_PROFILE_STATISTICS),
    ]
