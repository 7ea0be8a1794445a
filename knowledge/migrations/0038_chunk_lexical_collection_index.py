"""A b-tree on the lexical copy's collection and chunk profile.

The lexical search found its candidates through the full-text GIN index alone: every chunk of the
whole table holding a query term, each then checked against the scope. With other collections in
the database (10,089 chunks, the searched one 151) a search read 1,000-3,000 rows to keep 60-100,
and its cost followed the table, not the scope. With this index and the scope's collections as a
plain condition (knowledge.retrieval.service._lexical), PostgreSQL can start from the scope's rows.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0037_explained_refusal_switches")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX chunk_lexical_collection ON knowledge_chunk_lexical (collection_id, chunk_profile_id)",
            "DROP INDEX chunk_lexical_collection",
        ),
    ]
