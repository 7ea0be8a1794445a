"""Move the stored minRelevanceScore from the seed's 0.30 to the measured default 0.0 and
semanticWeight from 0.4 to 0.3, and store a row for the new minAnswerability parameter.

A cosine cut of 0.30 dropped lexical hits that the semantic model scores low
(cross-lingual cells, code names) before fusion could rank them; whether the
results answer at all is now the answerability verdict's job (minAnswerability).
Only a value still at the old default and not locked is changed.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    from knowledge.parameters import PARAMETERS

    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key="minRelevanceScore", value=0.3, is_locked=False).update(value=0.0)
    KnowledgeSetting.objects.filter(key="semanticWeight", value=0.4, is_locked=False).update(value=0.3)
    spec = PARAMETERS["minAnswerability"]
    KnowledgeSetting.objects.get_or_create(
        key=spec.key, defaults={"value": spec.default, "help_text": spec.help_text}
    )


def backwards(apps, schema_editor):
    KnowledgeSetting = apps.get_model("knowledge", "KnowledgeSetting")
    KnowledgeSetting.objects.filter(key="minRelevanceScore", value=0.0, is_locked=False).update(value=0.3)
    KnowledgeSetting.objects.filter(key="semanticWeight", value=0.3, is_locked=False).update(value=0.4)
    KnowledgeSetting.objects.filter(key="minAnswerability").delete()


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0009_share_links_and_revocation")]
    operations = [migrations.RunPython(forwards, backwards)]
