"""The per-model HNSW graphs are rebuilt with ef_construction 200 (was 64).

Built at 64 over 25,500 corpus chunks (documentation, an API spec with thousands of near-identical
examples, a long guideline), the graph left regions unreachable: for some questions an HNSW search at
ef_search 400 returned none of the 50 chunks an exact scan finds, whatever the filter (see
knowledge.models.documents.HNSW_EF_CONSTRUCTION). The build runs with more maintenance memory so the
graph is built in memory.
"""

import pgvector.django.indexes
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0022_score_fusion_on"),
    ]

    operations = [
        migrations.RunSQL("SET maintenance_work_mem = '512MB'", reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveIndex(
            model_name="chunk",
            name="chunk_embedding_hnsw_minilm",
        ),
        migrations.RemoveIndex(
            model_name="chunk",
            name="chunk_embedding_hnsw_e5",
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
    ]
