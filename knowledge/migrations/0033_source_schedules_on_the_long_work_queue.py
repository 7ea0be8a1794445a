"""Source schedules made before the long-work queue existed name no queue, so the document queue's
cluster would take them and a sync would hold the worker uploads wait for: they move to the long-work
queue's cluster (knowledge.task_queues)."""

from django.conf import settings
from django.db import migrations

SYNC_TASK = "knowledge.tasks.sync_source"


def to_long_work(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(func=SYNC_TASK).update(cluster=settings.KNOWLEDGE_LONG_WORK_QUEUE)


def to_default(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(func=SYNC_TASK).update(cluster=None)


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0032_source_disk_bytes"),
        ("django_q", "0014_schedule_cluster"),
    ]

    operations = [migrations.RunPython(to_long_work, to_default)]
