"""Store a row for the new queryIntent parameter (off); semanticWeight 0.35 -> 0.65.

Both chosen by leave-one-set-out over three question sets (development, shared paraphrased,
tests/data/heldout_questions.jsonl): for each set, the setting best on the other two, judged on the
held-out one (README, evaluation). 0.65 was the choice for two of the three and is the best on all
three together; the API intent filter lowered held-out recall@5 on every set, so it is off (it stays
available per profile or call). Only a value still at the old default and not locked is changed.
"""

from django.db import migrations

OLD_WEIGHT, NEW_WEIGHT = 0.35, 0.65


def forwards(apps, schema_editor):
    from knowledge.parameters import PARAMETERS

    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key="semanticWeight", value=OLD_WEIGHT, is_locked=False).update(
        value=NEW_WEIGHT
    )
    spec = PARAMETERS["queryIntent"]
    KnowledgeSetting.objects.get_or_create(
        key=spec.key, defaults={"value": spec.default, "help_text": spec.help_text}
    )


def backwards(apps, schema_editor):
    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key="semanticWeight", value=NEW_WEIGHT, is_locked=False).update(
        value=OLD_WEIGHT
    )
    KnowledgeSetting.objects.filter(key="queryIntent").delete()


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0017_worker_probe")]
    operations = [migrations.RunPython(forwards, backwards)]
