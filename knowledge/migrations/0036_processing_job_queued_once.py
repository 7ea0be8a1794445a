"""A document waits for at most one run per chunk profile: duplicate queued jobs are merged first."""

from django.db import migrations, models
from django.db.models import Max, Min


def merge_queued_twins(apps, schema_editor):
    """Keep the oldest queued job of each document and chunk profile (with the most runs any of them
    had, so a document that keeps killing its worker still fails after its attempts); the others go.
    A task still carrying a removed job's id finds it gone and does nothing, or runs another job."""
    ProcessingJob = apps.get_model("knowledge", "ProcessingJob")
    queued = ProcessingJob.objects.filter(state="queued")
    twins = (
        queued.values("document_id", "chunk_profile_id")
        .annotate(keep=Min("pk"), attempts=Max("attempts"), count=models.Count("pk"))
        .filter(count__gt=1)
    )
    for twin in twins:
        same = queued.filter(document_id=twin["document_id"], chunk_profile_id=twin["chunk_profile_id"])
        same.filter(pk=twin["keep"]).update(attempts=twin["attempts"])
        same.exclude(pk=twin["keep"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0035_source_sync_worker"),
    ]

    operations = [
        migrations.RunPython(merge_queued_twins, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="processingjob",
            constraint=models.UniqueConstraint(
                condition=models.Q(("chunk_profile__isnull", False), ("state", "queued")),
                fields=("document", "chunk_profile"),
                name="processing_job_queued_once_per_profile",
            ),
        ),
        migrations.AddConstraint(
            model_name="processingjob",
            constraint=models.UniqueConstraint(
                condition=models.Q(("chunk_profile__isnull", True), ("state", "queued")),
                fields=("document",),
                name="processing_job_queued_once_current_profile",
            ),
        ),
    ]
