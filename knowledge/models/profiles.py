from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from knowledge.models.collections import Collection
from knowledge.models.model_registry import RerankEndpoint
from knowledge.parameters import ConfigError, validate_overrides


class Profile(models.Model):
    """A rag_focused profile: which collections to search and how."""

    class ProfileType(models.TextChoices):
        RAG_FOCUSED = "rag_focused", "Focus (rag_focused)"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="knowledge_profiles",
        help_text="Empty for a profile the operator provides to everyone.",
    )
    name = models.CharField(max_length=200)
    tag = models.SlugField(max_length=40, help_text="Short handle, e.g. HR.")
    profile_type = models.CharField(
        max_length=20, choices=ProfileType.choices, default=ProfileType.RAG_FOCUSED
    )
    knowledge_overrides = models.JSONField(
        default=dict,
        blank=True,
        help_text='Per-profile values for knowledge parameters, e.g. {"maxDocs": 5}.',
    )
    collections = models.ManyToManyField(
        Collection, through="ProfileCollection", related_name="profiles", blank=True
    )
    reranker = models.ForeignKey(
        RerankEndpoint,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="profiles",
        help_text="What reranks the collections marked for reranking. Empty: the LLM.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="unique_profile_name_per_owner")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        try:
            self.knowledge_overrides = validate_overrides(self.knowledge_overrides or {})
        except ConfigError as exc:
            raise ValidationError({"knowledge_overrides": str(exc)}) from exc


class ProfileCollection(models.Model):
    profile = models.ForeignKey(Profile, on_delete=models.CASCADE, related_name="profile_collections")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="profile_links")
    reranking = models.BooleanField(
        default=False,
        help_text="Rerank this collection's results (with the profile's reranker, else the LLM).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["profile", "collection"], name="collection_once_per_profile")
        ]

    def __str__(self) -> str:
        return f"{self.profile} / {self.collection}"
