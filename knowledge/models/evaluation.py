"""Stored evaluation sets and the runs made on them."""

from django.conf import settings as django_settings
from django.db import models

from knowledge.models.collections import ChunkProfile, Collection
from knowledge.models.profiles import Profile


class EvalSet(models.Model):
    """A named question set; importing again replaces its questions."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    collections = models.ManyToManyField(
        Collection,
        blank=True,
        related_name="gate_eval_sets",
        help_text="Collections whose new releases are measured on this set before they serve.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EvalQuestion(models.Model):
    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="questions")
    external_id = models.CharField(max_length=200, help_text="The question's id in the imported file.")
    question = models.TextField()
    expected_sources = models.JSONField(
        default=list, blank=True, help_text='[{"document": ..., "source_ref": ...}]; empty: no answer.'
    )
    answer = models.TextField(blank=True)
    kind = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["eval_set", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["eval_set", "external_id"], name="unique_eval_question_id")
        ]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.question[:60]}"


class EvalRun(models.Model):
    """One evaluation of a set: what was searched, with which settings, and the metrics."""

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="runs")
    collection = models.ForeignKey(
        Collection, null=True, blank=True, on_delete=models.SET_NULL, related_name="eval_runs"
    )
    profile = models.ForeignKey(
        Profile, null=True, blank=True, on_delete=models.SET_NULL, related_name="eval_runs"
    )
    chunk_profile = models.ForeignKey(
        ChunkProfile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="eval_runs",
        help_text="The chunk profile searched (the collection's at run time unless overridden).",
    )
    k = models.PositiveIntegerField(default=10)
    settings = models.JSONField(default=dict, blank=True, help_text="The --set overrides of this run.")
    with_answers = models.BooleanField(default=False)
    metrics = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="eval_runs",
    )

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.eval_set}"

    @property
    def label(self) -> str:
        target = (
            self.collection.name if self.collection_id else (self.profile.name if self.profile_id else "-")
        )
        chunks = self.chunk_profile.name if self.chunk_profile_id else "-"
        overrides = ",".join(f"{k}={v}" for k, v in sorted(self.settings.items())) or "defaults"
        return f"#{self.pk} {target}/{chunks} {overrides}"
