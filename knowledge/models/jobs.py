"""Processing requests and worker liveness, shared by every worker process through the database.

The queue (django-q2 on the ORM or on Redis) only carries a job's id. Which run
processes a document is decided here, by an atomic claim on the job's row, so
several workers on one queue never process the same request twice, and a task
delivered twice (a re-queued lost task, the ORM broker's lease running out) is
a no-op. Redis pops a task without acknowledgement: a task dies with its
worker, so the worker sweep re-queues jobs whose run stopped beating.
"""

from django.db import models

from knowledge.models.collections import ChunkProfile
from knowledge.models.documents import Document


class ProcessingJob(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="jobs")
    chunk_profile = models.ForeignKey(ChunkProfile, null=True, blank=True, on_delete=models.CASCADE)
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    attempts = models.PositiveIntegerField(default=0, help_text="Runs that claimed this job.")
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid of the run holding the claim.")
    queued_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["state", "heartbeat_at"]),
            models.Index(fields=["state", "queued_at"]),
            models.Index(fields=["claimed_at"]),  # whose turn it is: the jobs started in the last hour
        ]
        # A document waits for at most one run per chunk profile (none: the collection's current one):
        # a queued run has not read anything yet, so one run serves every request made before it
        # starts (knowledge.processing_jobs, job_enqueue). Two indexes, as NULLs are never equal.
        constraints = [
            models.UniqueConstraint(
                fields=["document", "chunk_profile"],
                condition=models.Q(state="queued", chunk_profile__isnull=False),
                name="processing_job_queued_once_per_profile",
            ),
            models.UniqueConstraint(
                fields=["document"],
                condition=models.Q(state="queued", chunk_profile__isnull=True),
                name="processing_job_queued_once_current_profile",
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} for document {self.document_id} ({self.state})"


class WorkerHeartbeat(models.Model):
    """One row per worker process, touched every few seconds; /healthz reads the newest."""

    name = models.CharField(max_length=200, unique=True)
    beat_at = models.DateTimeField(db_index=True)
    cluster = models.CharField(max_length=200, blank=True, help_text="host:pid of the cluster's sentinel.")
    idle_since = models.DateTimeField(
        null=True, blank=True, help_text="Since when it has waited for a task; empty while it runs one."
    )

    def __str__(self) -> str:
        return f"{self.name} at {self.beat_at:%H:%M:%S}"


class WorkerProbe(models.Model):
    """A no-op task each cluster sends through the broker: proof that a queued task is taken.

    A worker process can be alive and beating yet unable to take a task (one that
    died holding the cluster's queue lock leaves the others waiting for it for good),
    so liveness is this round trip, not the heartbeat alone.
    """

    cluster = models.CharField(max_length=200, unique=True)
    sent_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"probe of {self.cluster} sent {self.sent_at:%H:%M:%S}"
