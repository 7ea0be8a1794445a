"""Releases: what produced a collection's chunks, evaluated before they serve (docs/design.md#releases).

A release names one chunk set of its collection: the chunks under its chunk profile and embedding
model. The collection's ``chunk_profile`` and ``embedding_model`` point at the serving release's
set, so the search scope (knowledge.retrieval.scope) reads only that release, and promotion or
rollback is one update of the collection row.
"""

from django.conf import settings as django_settings
from django.db import models
from django.db.models import Q

from knowledge.models.collections import ChunkProfile, Collection


class Release(models.Model):
    class State(models.TextChoices):
        BUILDING = "building", "Building"  # its chunks are being written; the serving release answers
        CANDIDATE = "candidate", "Candidate"  # built; the gate is measuring it against the serving one
        HELD = "held", "Held"  # the gate saw a regression, or had nothing to measure: the operator decides
        SERVING = "serving", "Serving"
        # Served before; its chunks are kept for a rollback until the retention period ends.
        RETIRED = "retired", "Retired"
        DISCARDED = "discarded", "Discarded"  # its chunks are gone

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="releases")
    state = models.CharField(max_length=10, choices=State.choices, default=State.BUILDING)
    # A profile with chunks, or that a collection uses, cannot be deleted (those keep PROTECT); one
    # that can takes with it only the records of releases whose chunks are gone.
    chunk_profile = models.ForeignKey(ChunkProfile, on_delete=models.CASCADE, related_name="releases")
    embedding_model = models.CharField(max_length=200)
    embedding_backend = models.CharField(max_length=50, blank=True)
    parser_version = models.CharField(
        max_length=300, blank=True, help_text="The document readers' library versions."
    )
    extraction_version = models.CharField(max_length=50, blank=True)
    product_version = models.CharField(max_length=50, blank=True)
    gate = models.JSONField(
        default=dict,
        blank=True,
        help_text="The gate's report: both releases' metrics and the per-question diff.",
    )
    reason = models.TextField(blank=True, help_text="Why it was held, stopped, discarded or rolled back.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    built_at = models.DateTimeField(null=True, blank=True)
    promoted_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["collection", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection"], condition=Q(state="serving"), name="one_serving_release"
            ),
            # Releases are told apart by their chunk set: two live ones may not share it.
            models.UniqueConstraint(
                fields=["collection", "chunk_profile", "embedding_model"],
                condition=~Q(state="discarded"),
                name="one_live_release_per_chunk_set",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.collection} release {self.pk} ({self.state})"

    @property
    def chunk_set(self) -> tuple[int, str]:
        return (self.chunk_profile_id, self.embedding_model)
