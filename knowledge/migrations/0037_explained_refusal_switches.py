"""Store rows for the switches of the refusals that say why (refuseMissingTerms, refuseAnswerType,
refuseOtherLanguages) and of answering from a closest match (answerFromClosestMatch), all on."""

from django.db import migrations

KEYS = ("refuseMissingTerms", "refuseAnswerType", "refuseOtherLanguages", "answerFromClosestMatch")


def forwards(apps, schema_editor):
    from knowledge.parameters import PARAMETERS

    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    for key in KEYS:
        spec = PARAMETERS[key]
        KnowledgeSetting.objects.get_or_create(
            key=spec.key, defaults={"value": spec.default, "help_text": spec.help_text}
        )


def backwards(apps, schema_editor):
    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key__in=KEYS).delete()


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0036_processing_job_queued_once")]
    operations = [migrations.RunPython(forwards, backwards)]
