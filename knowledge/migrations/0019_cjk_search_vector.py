"""Text without spaces (Japanese, Chinese, Korean, Thai) is searchable by its own words.

PostgreSQL's 'english' parser makes a whole run of kana and kanji one lexeme
("ノートパソコンの単価"), so no question ever matches it unless it repeats the run
exactly. The chunk's full-text vector is now ``knowledge_search_vector(content)``:

* the 'english' vector of the text with those scripts blanked out (for text
  without them, exactly the vector it had: English search does not change);
* plus, for each run of CJK (Han, hiragana, katakana), Hangul or Thai
  characters, its overlapping character bigrams ("ノー", "ート", ...), or the
  character itself for a run of one. The run is NFKC-normalised first, so
  half-width katakana matches full-width.

This is the CJK bigram indexing of Lucene's CJKBigramFilter: a question's own
words become bigrams too (the query side calls the same function), every
bigram of a word is in every chunk holding the word, and the bigrams are
ordinary lexemes of the one vector -- the same GIN index, the same BM25
statistics kept by the triggers of 0004, the same scoring and answerability
coverage. Bigrams are positioned after the English words (tsvector ``||``
shifts them), one position each, so a chunk's length counts them like words.

The function calls built-in functions only (a dump restores the generated column
with an empty search_path, where only pg_catalog is found).

Existing chunks: the generated column is dropped and added again with the new
expression, which rewrites knowledge_chunk (and rebuilds its indexes) in one
statement; no row trigger fires, so the lexical copy (0016) and the statistics
(0004) are then rebuilt from the new vectors. The whole migration holds an
exclusive lock on knowledge_chunk: searches and ingestion wait for it (measured
time per 10,000 chunks: see the README).
"""

from importlib import import_module

import django.contrib.postgres.search
from django.db import migrations, models

import knowledge.models.documents

statistics = import_module("knowledge.migrations.0004_lexical")
copy = import_module("knowledge.migrations.0016_chunk_lexical_scope_columns")

# Runs of characters written without spaces between words. Han (with the iteration marks 々〆
# and the CJK extensions), hiragana, katakana (without the middle dot ・, a separator) and its
# phonetic extensions form one class, as Japanese mixes them within a word; Hangul and Thai are
# classes of their own.
CJK_RUN = (
    r"[\u3005\u3006\u3041-\u309f\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
    r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
    r"\uff66-\uff9f]+"
    r"|[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]+"
    r"|[\u0e01-\u0e5b]+"
)

SEARCH_VECTOR_FUNCTION = rf"""
CREATE OR REPLACE FUNCTION knowledge_search_vector(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $function$
    SELECT CASE WHEN body !~ '{CJK_RUN}'
        THEN to_tsvector('english'::regconfig, body)
        ELSE to_tsvector('english'::regconfig, regexp_replace(body, '{CJK_RUN}', ' ', 'g'))
            || coalesce((
                SELECT string_agg(
                    '''' || g.gram || ''':' || least(g.position, 16383), ' ')::tsvector
                FROM (
                    SELECT substr(r.match[1], i, 2) AS gram,
                        row_number() OVER (ORDER BY r.number, i) AS position
                    FROM regexp_matches(normalize(body, NFKC), '{CJK_RUN}', 'g')
                        WITH ORDINALITY AS r(match, number)
                    CROSS JOIN LATERAL generate_series(
                        1, greatest(length(r.match[1]) - 1, 1)) AS i
                ) AS g
            ), ''::tsvector)
    END
$function$
"""

ENGLISH_ONLY = "to_tsvector('english'::regconfig, content)"
WITH_BIGRAMS = "knowledge_search_vector(content)"


def _replace_column(expression: str) -> list[str]:
    """Drop and re-add the generated column (one rewrite; ALTER ... SET EXPRESSION needs PostgreSQL 17)."""
    return [
        "LOCK TABLE knowledge_chunk IN ACCESS EXCLUSIVE MODE",
        "SET LOCAL maintenance_work_mem = '256MB'",
        "ALTER TABLE knowledge_chunk DROP COLUMN search_vector",
        f"ALTER TABLE knowledge_chunk ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({expression}) STORED",
    ]


# The rewrite fires no trigger: the copy and the statistics are rebuilt from the new vectors.
REBUILD_DERIVED = [
    *copy.REBUILD[1:],
    "TRUNCATE knowledge_lexical_term, knowledge_lexical_partition",
    *statistics.BACKFILL[1:],
    "ANALYZE knowledge_lexical_term",
    "ANALYZE knowledge_lexical_partition",
]

FORWARD = [SEARCH_VECTOR_FUNCTION, *_replace_column(WITH_BIGRAMS), *REBUILD_DERIVED]
BACKWARD = [
    *_replace_column(ENGLISH_ONLY),
    *REBUILD_DERIVED,
    "DROP FUNCTION knowledge_search_vector(text)",
]


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0018_query_intent_and_semantic_weight")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)],
            state_operations=[
                migrations.AlterField(
                    model_name="chunk",
                    name="search_vector",
                    field=models.GeneratedField(
                        db_persist=True,
                        expression=knowledge.models.documents.SearchVectorOf("content"),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                    ),
                ),
            ],
        ),
    ]
