"""Store the default chunk profile and a row for every global knowledge parameter."""

from django.db import migrations


def create_defaults(apps, schema_editor):
    from knowledge.parameters import PARAMETERS

    ChunkProfile = apps.get_model("knowledge", "ChunkProfile")
    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    if not ChunkProfile.objects.filter(is_active=True).exists():
        ChunkProfile.objects.get_or_create(
            name="default",
            defaults={"strategy": "paragraph", "chunk_size": 1000, "chunk_overlap": 200, "is_active": True},
        )
    for key, spec in PARAMETERS.items():
        KnowledgeSetting.objects.get_or_create(
            key=key, defaults={"value": spec.default, "help_text": spec.help_text}
        )


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]
    operations = [migrations.RunPython(create_defaults, migrations.RunPython.noop)]
