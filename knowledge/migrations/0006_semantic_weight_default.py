"""Move the stored semanticWeight from the seed's 0.7 to the measured default 0.4.

Only a value still at the old default and not locked is changed: an operator's
own choice is kept.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key="semanticWeight", value=0.7, is_locked=False).update(value=0.4)


def backwards(apps, schema_editor):
    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key="semanticWeight", value=0.4, is_locked=False).update(value=0.7)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0005_llm_settings")]
    operations = [migrations.RunPython(forwards, backwards)]
