"""A narrow copy of each chunk's full-text vector, with its length, for BM25 scoring.

The lexical search reads the full-text vector of every candidate it scores
(hundreds to a few thousand per question). In knowledge_chunk that vector sits
in wide rows (content, a 1.5 kB embedding, metadata) and, past the 2 kB row
limit, in the TOAST table: each candidate cost a heap page plus TOAST index and
page reads, three times over (once per function reading the vector), and the
length BM25 normalises by was recomputed every time. knowledge_chunk_lexical
holds just (chunk id, length, vector), about 900 bytes a row kept inline, with
its own GIN index; the search finds and scores candidates there and joins
knowledge_chunk by primary key only to apply the caller's scope, so access
control is still evaluated on the chunk rows themselves.

Kept in step with knowledge_chunk by statement-level triggers (transition
tables: one INSERT ... SELECT per bulk insert), in the writer's transaction, like
the statistics tables of migration 0004. No Django model: nothing but these
triggers writes the table and knowledge.retrieval.lexical reads it with SQL.
"""

from django.db import migrations

CREATE_TABLE = """
    CREATE TABLE knowledge_chunk_lexical (
        chunk_id bigint PRIMARY KEY,
        length integer NOT NULL,
        search_vector tsvector NOT NULL
    )
"""

# A chunk's length is its number of lexeme occurrences (positions): the count the
# statistics triggers sum into knowledge_lexical_partition.tokens.
SYNC_FUNCTION = r"""
CREATE FUNCTION knowledge_chunk_lexical_sync() RETURNS trigger
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
        -- Only rows whose text changed (an update of other columns leaves the copy alone).
        INSERT INTO knowledge_chunk_lexical AS l (chunk_id, length, search_vector)
        SELECT n.id, knowledge_lexeme_count(n.search_vector), n.search_vector
        FROM new_rows AS n LEFT JOIN old_rows AS o ON o.id = n.id
        WHERE o.search_vector IS DISTINCT FROM n.search_vector OR o.id IS NULL
        ORDER BY n.id
        ON CONFLICT (chunk_id) DO UPDATE SET length = excluded.length, search_vector = excluded.search_vector;
    ELSE
        INSERT INTO knowledge_chunk_lexical AS l (chunk_id, length, search_vector)
        SELECT n.id, knowledge_lexeme_count(n.search_vector), n.search_vector
        FROM new_rows AS n
        ORDER BY n.id
        ON CONFLICT (chunk_id) DO UPDATE SET length = excluded.length, search_vector = excluded.search_vector;
    END IF;
    RETURN NULL;
END
$function$
"""

COUNT_FUNCTION = """
CREATE FUNCTION knowledge_lexeme_count(vector tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(vector) AS u), 0)::integer $$
"""

CLEAR_FUNCTION = """
CREATE FUNCTION knowledge_chunk_lexical_clear() RETURNS trigger
LANGUAGE plpgsql AS $function$
BEGIN
    TRUNCATE knowledge_chunk_lexical;
    RETURN NULL;
END
$function$
"""

# Transition tables rule out several events per trigger, hence one trigger per event.
TRIGGERS = [
    """
    CREATE TRIGGER knowledge_chunk_lexical_copy_insert AFTER INSERT ON knowledge_chunk
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunk_lexical_sync()
    """,
    """
    CREATE TRIGGER knowledge_chunk_lexical_copy_delete AFTER DELETE ON knowledge_chunk
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunk_lexical_sync()
    """,
    """
    CREATE TRIGGER knowledge_chunk_lexical_copy_update AFTER UPDATE ON knowledge_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunk_lexical_sync()
    """,
    """
    CREATE TRIGGER knowledge_chunk_lexical_copy_truncate AFTER TRUNCATE ON knowledge_chunk
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunk_lexical_clear()
    """,
]

# The lock keeps writers out between the copy and the triggers taking over (the
# migration runs in one transaction). The GIN index is built after the copy, much
# faster than inserting into it row by row (1,000,000 chunks: see the README).
BACKFILL = [
    "LOCK TABLE knowledge_chunk IN SHARE ROW EXCLUSIVE MODE",
    """
    INSERT INTO knowledge_chunk_lexical (chunk_id, length, search_vector)
    SELECT c.id, knowledge_lexeme_count(c.search_vector), c.search_vector FROM knowledge_chunk AS c
    """,
    "SET LOCAL maintenance_work_mem = '256MB'",
    "CREATE INDEX chunk_lexical_search_gin ON knowledge_chunk_lexical USING gin (search_vector)",
    "ANALYZE knowledge_chunk_lexical",
]

DROP = [
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_copy_insert ON knowledge_chunk",
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_copy_delete ON knowledge_chunk",
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_copy_update ON knowledge_chunk",
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_copy_truncate ON knowledge_chunk",
    "DROP FUNCTION IF EXISTS knowledge_chunk_lexical_sync()",
    "DROP FUNCTION IF EXISTS knowledge_chunk_lexical_clear()",
    "DROP TABLE IF EXISTS knowledge_chunk_lexical",
    "DROP FUNCTION IF EXISTS knowledge_lexeme_count(tsvector)",
]


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0014_spread_sources_and_semantic_weight")]

    operations = [
        migrations.RunSQL(
            sql=[
                CREATE_TABLE,
                COUNT_FUNCTION,
                SYNC_FUNCTION,
                CLEAR_FUNCTION,
                *TRIGGERS,
                *BACKFILL,
            ],
            reverse_sql=DROP,
        ),
    ]
