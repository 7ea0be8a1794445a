"""Document summaries for routing, and a stored row for every multi-step retrieval parameter."""

import django.contrib.postgres.fields
import django.db.models.deletion
import pgvector.django
from django.conf import settings
from django.db import migrations, models


def store_new_parameters(apps, schema_editor):
    from knowledge.parameters import AGENTIC_PARAMETERS

    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    for spec in AGENTIC_PARAMETERS:
        KnowledgeSetting.objects.get_or_create(
            key=spec.key, defaults={"value": spec.default, "help_text": spec.help_text}
        )


def remove_new_parameters(apps, schema_editor):
    from knowledge.parameters import AGENTIC_PARAMETERS

    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key__in=[spec.key for spec in AGENTIC_PARAMETERS]).delete()


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0007_evaluation")]

    operations = [
        migrations.CreateModel(
            name="DocumentSummary",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("document_type", models.CharField(max_length=200)),
                ("summary", models.TextField()),
                (
                    "key_topics",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=200), blank=True, default=list, size=None
                    ),
                ),
                ("use_for", models.TextField(blank=True)),
                (
                    "method",
                    models.CharField(
                        choices=[
                            ("llm", "Written by the LLM"),
                            ("extractive", "Extracted from the document"),
                        ],
                        max_length=12,
                    ),
                ),
                (
                    "model",
                    models.CharField(blank=True, help_text="The LLM that wrote it, if any.", max_length=200),
                ),
                (
                    "note",
                    models.TextField(
                        blank=True, help_text="Why the LLM's summary was not used, if it was not."
                    ),
                ),
                ("embedding_model", models.CharField(max_length=200)),
                (
                    "embedding",
                    pgvector.django.VectorField(dimensions=settings.KNOWLEDGE_EMBEDDING_DIMENSIONS),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "document",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="summary",
                        to="knowledge.document",
                    ),
                ),
            ],
            options={"verbose_name_plural": "document summaries"},
        ),
        migrations.RunPython(store_new_parameters, remove_new_parameters),
    ]
