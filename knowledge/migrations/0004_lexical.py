"""BM25 statistics for lexical search, kept exact by triggers on knowledge_chunk.

Per (collection, chunk profile) -- the grain at which access control and the
profile filter carve the chunk table -- two tables hold what BM25 needs beyond
the chunk itself:

    knowledge_lexical_partition  chunks, tokens   (N and average length)
    knowledge_lexical_term       lexeme, chunks   (document frequency)

Statement-level triggers with transition tables fold a whole bulk insert or
delete into one grouped upsert, so the ingestion pipeline's one transaction per
document updates the statistics in the same transaction: they commit or roll
back with the chunks. Writers of one collection take a transaction advisory lock
on it before touching the statistics, so two of them queue instead of
deadlocking over lexeme rows locked in different orders (the pipeline already
serialises them at commit with its lock on the collection row).
No Django models: nothing but these triggers writes the tables, and
knowledge.retrieval.lexical reads them with SQL.
"""

from django.db import migrations

CREATE_TABLES = [
    """
    CREATE TABLE knowledge_lexical_partition (
        collection_id bigint NOT NULL,
        chunk_profile_id bigint NOT NULL,
        chunks bigint NOT NULL,
        tokens bigint NOT NULL,
        PRIMARY KEY (collection_id, chunk_profile_id)
    )
    """,
    """
    CREATE TABLE knowledge_lexical_term (
        collection_id bigint NOT NULL,
        chunk_profile_id bigint NOT NULL,
        lexeme text NOT NULL,
        chunks bigint NOT NULL,
        PRIMARY KEY (collection_id, chunk_profile_id, lexeme)
    )
    """,
]

# Transition tables are only visible inside the trigger function itself, so the
# shared statements are format() templates over the row source (%1$s).
# A chunk's length is its number of lexeme occurrences (positions), the length
# BM25 normalises by; the search code reads the same count with ts_rank.
COUNT_FUNCTION = r"""
CREATE FUNCTION knowledge_lexical_count() RETURNS trigger
LANGUAGE plpgsql AS $function$
DECLARE
    -- For an UPDATE, only rows whose searchable content or partition changed.
    changed CONSTANT text := '(SELECT %1$s.* FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id'
        ' WHERE (o.collection_id, o.chunk_profile_id, o.search_vector)'
        ' IS DISTINCT FROM (n.collection_id, n.chunk_profile_id, n.search_vector))';
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
            INSERT INTO knowledge_lexical_partition AS p (collection_id, chunk_profile_id, chunks, tokens)
            SELECT r.collection_id, r.chunk_profile_id, $1 * count(*), $1 * coalesce(sum(l.tokens), 0)
            FROM %1$s AS r
            CROSS JOIN LATERAL (
                SELECT sum(cardinality(u.positions)) AS tokens FROM unnest(r.search_vector) AS u
            ) AS l
            GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (collection_id, chunk_profile_id) DO UPDATE
            SET chunks = p.chunks + excluded.chunks, tokens = p.tokens + excluded.tokens
        $sql$, sources[i]) USING signs[i];
        EXECUTE format($sql$
            INSERT INTO knowledge_lexical_term AS t (collection_id, chunk_profile_id, lexeme, chunks)
            SELECT r.collection_id, r.chunk_profile_id, u.lexeme, $1 * count(*)
            FROM %1$s AS r CROSS JOIN LATERAL unnest(r.search_vector) AS u
            GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            ON CONFLICT (collection_id, chunk_profile_id, lexeme) DO UPDATE
            SET chunks = t.chunks + excluded.chunks
        $sql$, sources[i]) USING signs[i];
    END LOOP;
    IF TG_OP <> 'INSERT' THEN
        -- A partition left without chunks (a deleted collection, a finished
        -- re-index) takes its lexemes along. Lexemes that merely dropped to zero
        -- in a live partition stay (bounded by its vocabulary); readers skip them.
        DELETE FROM knowledge_lexical_term AS t USING knowledge_lexical_partition AS p
        WHERE p.chunks <= 0 AND t.collection_id = p.collection_id
          AND t.chunk_profile_id = p.chunk_profile_id;
        DELETE FROM knowledge_lexical_partition WHERE chunks <= 0;
    END IF;
    RETURN NULL;
END
$function$
"""

CLEAR_FUNCTION = """
CREATE FUNCTION knowledge_lexical_clear() RETURNS trigger
LANGUAGE plpgsql AS $function$
BEGIN
    TRUNCATE knowledge_lexical_term, knowledge_lexical_partition;
    RETURN NULL;
END
$function$
"""

# Transition tables rule out a column list (UPDATE OF ...) and several events
# per trigger, hence one trigger per event; the function skips unchanged rows.
TRIGGERS = [
    """
    CREATE TRIGGER knowledge_chunk_lexical_insert AFTER INSERT ON knowledge_chunk
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_lexical_count()
    """,
    """
    CREATE TRIGGER knowledge_chunk_lexical_delete AFTER DELETE ON knowledge_chunk
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_lexical_count()
    """,
    """
    CREATE TRIGGER knowledge_chunk_lexical_update AFTER UPDATE ON knowledge_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_lexical_count()
    """,
    """
    CREATE TRIGGER knowledge_chunk_lexical_truncate AFTER TRUNCATE ON knowledge_chunk
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_lexical_clear()
    """,
]

# The lock keeps writers out between the backfill and the triggers taking over
# (the migration runs in one transaction).
BACKFILL = [
    "LOCK TABLE knowledge_chunk IN SHARE ROW EXCLUSIVE MODE",
    """
    INSERT INTO knowledge_lexical_partition (collection_id, chunk_profile_id, chunks, tokens)
    SELECT c.collection_id, c.chunk_profile_id, count(*), coalesce(sum(l.tokens), 0)
    FROM knowledge_chunk AS c
    CROSS JOIN LATERAL (
        SELECT sum(cardinality(u.positions)) AS tokens FROM unnest(c.search_vector) AS u
    ) AS l
    GROUP BY 1, 2
    """,
    """
    INSERT INTO knowledge_lexical_term (collection_id, chunk_profile_id, lexeme, chunks)
    SELECT c.collection_id, c.chunk_profile_id, u.lexeme, count(*)
    FROM knowledge_chunk AS c CROSS JOIN LATERAL unnest(c.search_vector) AS u
    GROUP BY 1, 2, 3
    """,
]

DROP = [
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_insert ON knowledge_chunk",
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_delete ON knowledge_chunk",
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_update ON knowledge_chunk",
    "DROP TRIGGER IF EXISTS knowledge_chunk_lexical_truncate ON knowledge_chunk",
    "DROP FUNCTION IF EXISTS knowledge_lexical_count()",
    "DROP FUNCTION IF EXISTS knowledge_lexical_clear()",
    "DROP TABLE IF EXISTS knowledge_lexical_term",
    "DROP TABLE IF EXISTS knowledge_lexical_partition",
]


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0003_collection_pending_chunk_profile"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[*CREATE_TABLES, COUNT_FUNCTION, CLEAR_FUNCTION, *TRIGGERS, *BACKFILL],
            reverse_sql=DROP,
        ),
    ]
