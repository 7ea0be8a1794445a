"""The lexical copy carries the chunk columns a search scope names, so access is checked on it.

Migration 0015's copy held (chunk id, length, vector); to apply the caller's scope
the lexical search looked each candidate up in knowledge_chunk by primary key,
a third of a search's time at 100,000 chunks (1,508 candidates: 6 of 21 ms,
EXPLAIN ANALYZE). The copy now also holds collection_id, chunk_profile_id,
document_id, embedding_model and metadata, under the chunk table's own names, so
the very SQL the access rule compiles to (knowledge.retrieval.scope.Scope.sql)
and the intent filters run on the copy unchanged. A condition naming any other
chunk column fails with "column does not exist": it can never pass silently.

The triggers of 0015 keep the copy in step in the writer's transaction; an update
now rewrites a chunk's copy when any copied column changes, not only its text.

The chunk table's own GIN index on search_vector is dropped: no product query
uses it any more (the lexical search and the benchmarks' references read the
copy), and every chunk insert paid for maintaining it.
"""

from importlib import import_module

from django.db import migrations

previous = import_module("knowledge.migrations.0015_chunk_lexical")

COLUMNS = (
    "chunk_id, collection_id, chunk_profile_id, document_id, embedding_model, metadata, length, search_vector"
)

CREATE_TABLE = """
    CREATE TABLE knowledge_chunk_lexical (
        chunk_id bigint PRIMARY KEY,
        collection_id bigint NOT NULL,
        chunk_profile_id bigint NOT NULL,
        document_id bigint NOT NULL,
        embedding_model varchar(200) NOT NULL,
        metadata jsonb NOT NULL,
        length integer NOT NULL,
        search_vector tsvector NOT NULL
    )
"""

_COPIED = (
    "n.id, n.collection_id, n.chunk_profile_id, n.document_id, n.embedding_model, n.metadata,"
    " knowledge_lexeme_count(n.search_vector), n.search_vector"
)
_ON_CONFLICT = """
        ON CONFLICT (chunk_id) DO UPDATE SET
            collection_id = excluded.collection_id, chunk_profile_id = excluded.chunk_profile_id,
            document_id = excluded.document_id, embedding_model = excluded.embedding_model,
            metadata = excluded.metadata, length = excluded.length, search_vector = excluded.search_vector"""

SYNC_FUNCTION = rf"""
CREATE OR REPLACE FUNCTION knowledge_chunk_lexical_sync() RETURNS trigger
LANGUAGE plpgsql AS $function$
BEGIN
    -- PL/pgSQL plans a statement when it first runs it, so each branch may name
    -- only the transition tables its event has.
    IF TG_OP = 'DELETE' THEN
        DELETE FROM knowledge_chunk_lexical AS l USING old_rows AS o WHERE l.chunk_id = o.id;
    ELSIF TG_OP = 'UPDATE' THEN
        DELETE FROM knowledge_chunk_lexical AS l
        USING (SELECT id FROM old_rows EXCEPT SELECT id FROM new_rows) AS gone
        WHERE l.chunk_id = gone.id;
        -- Only rows whose copied columns changed (an update of other columns leaves the copy alone).
        INSERT INTO knowledge_chunk_lexical AS l ({COLUMNS})
        SELECT {_COPIED}
        FROM new_rows AS n LEFT JOIN old_rows AS o ON o.id = n.id
        WHERE o.id IS NULL
            OR (o.collection_id, o.chunk_profile_id, o.document_id, o.embedding_model, o.metadata, o.search_vector)
                IS DISTINCT FROM
               (n.collection_id, n.chunk_profile_id, n.document_id, n.embedding_model, n.metadata, n.search_vector)
        ORDER BY n.id{_ON_CONFLICT};
    ELSE
        INSERT INTO knowledge_chunk_lexical AS l ({COLUMNS})
        SELECT {_COPIED}
        FROM new_rows AS n
        ORDER BY n.id{_ON_CONFLICT};
    END IF;
    RETURN NULL;
END
$function$
"""

# The lock keeps writers out until the new copy and its function are in place (the migration
# runs in one transaction). Filling a new table and indexing it afterwards is much faster than
# updating every row of the old one (each update would also insert into its GIN index).
REBUILD = [
    "LOCK TABLE knowledge_chunk IN SHARE ROW EXCLUSIVE MODE",
    "DROP TABLE knowledge_chunk_lexical",
    CREATE_TABLE,
    f"INSERT INTO knowledge_chunk_lexical ({COLUMNS}) SELECT {_COPIED} FROM knowledge_chunk AS n",
    "SET LOCAL maintenance_work_mem = '256MB'",
    "CREATE INDEX chunk_lexical_search_gin ON knowledge_chunk_lexical USING gin (search_vector)",
    SYNC_FUNCTION,
    "ANALYZE knowledge_chunk_lexical",
]

# Back to 0015's shape: the narrow table and its function.
RESTORE = [
    "LOCK TABLE knowledge_chunk IN SHARE ROW EXCLUSIVE MODE",
    "DROP TABLE knowledge_chunk_lexical",
    previous.CREATE_TABLE,
    previous.SYNC_FUNCTION.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
    *previous.BACKFILL[1:],
]


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0015_chunk_lexical")]

    operations = [
        migrations.RunSQL(sql=REBUILD, reverse_sql=RESTORE),
        migrations.RemoveIndex(model_name="chunk", name="chunk_search_vector_gin"),
    ]
