import secrets

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q


class ChunkProfile(models.Model):
    """How documents are cut into chunks; every chunk records the profile that made it."""

    class Strategy(models.TextChoices):
        PARAGRAPH = "paragraph", "Paragraph (default)"
        SENTENCE = "sentence", "Sentence"
        FIXED = "fixed", "Fixed size with overlap"
        SEMANTIC = "semantic", "Semantic (heading-aware, token-based)"

    name = models.CharField(max_length=100, unique=True)
    strategy = models.CharField(max_length=20, choices=Strategy.choices, default=Strategy.PARAGRAPH)
    chunk_size = models.PositiveIntegerField(
        default=1000,
        validators=[MinValueValidator(50), MaxValueValidator(20000)],
        help_text="Characters per chunk; model tokens for the semantic strategy.",
    )
    chunk_overlap = models.PositiveIntegerField(
        default=200, help_text="Overlap between consecutive chunks, in the same unit as the size."
    )
    is_active = models.BooleanField(
        default=False, help_text="The profile new collections start with. Only one is active."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_active"], condition=Q(is_active=True), name="one_active_chunk_profile"
            ),
            models.CheckConstraint(
                condition=Q(chunk_overlap__lt=models.F("chunk_size")),
                name="chunk_overlap_below_size",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.strategy}, {self.chunk_size}/{self.chunk_overlap})"

    # How the profile cuts documents. Fixed once a collection or a release uses the profile, so that
    # a release's profile always says how its chunks were cut: a different cut is a new profile,
    # re-indexed into a release the gate measures (docs/operator-guide/releases.md).
    CUTTING_FIELDS = ("strategy", "chunk_size", "chunk_overlap")

    def in_use(self) -> bool:
        """Whether chunks, a release or a collection (serving or re-indexing to it) use the profile."""
        if self.pk is None:
            return False
        return (
            self.chunks.exists()
            or self.releases.exists()
            or Collection.objects.filter(Q(chunk_profile=self) | Q(pending_chunk_profile=self)).exists()
        )

    def clean(self) -> None:
        if self.chunk_overlap >= self.chunk_size:
            raise ValidationError({"chunk_overlap": "The overlap must be smaller than the chunk size."})
        self._cutting_unchanged_when_in_use()

    def _cutting_unchanged_when_in_use(self) -> None:
        if not self.in_use():
            return
        stored = ChunkProfile.objects.values(*self.CUTTING_FIELDS).get(pk=self.pk)
        changed = [name for name in self.CUTTING_FIELDS if stored[name] != getattr(self, name)]
        if changed:
            raise ValidationError(
                {
                    name: "Collections' chunks were cut with this profile, so how it cuts cannot change: "
                    "add a new profile and re-index under it (the gate measures the new release)."
                    for name in changed
                }
            )


def new_share_token() -> str:
    """An unguessable share-link secret (256 bits): unlisted must mean "only with the link"."""
    return secrets.token_urlsafe(32)


class Collection(models.Model):
    """A named set of documents. No owner means admin-owned (readable by all users)."""

    class Visibility(models.TextChoices):
        # Who can read it, in words ("unlisted" would be confused with a marketplace listing).
        PRIVATE = "private", "Only you (and subscribers, if listed)"
        UNLISTED = "unlisted", "Anyone with the share link"
        PUBLIC = "public", "Everyone signed in"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="collections",
        help_text="Empty for an admin-owned collection.",
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    tags = ArrayField(models.CharField(max_length=50), default=list, blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE)
    listed = models.BooleanField(default=False, help_text="Shown in the marketplace.")
    share_token = models.CharField(
        max_length=64,
        unique=True,
        default=new_share_token,
        editable=False,
        help_text="The secret in the share link of an unlisted collection; rotating it drops its holders.",
    )
    # Validated against the registry (knowledge.clients.embedding_registry) by the services:
    # this layer sits below the clients. A change re-embeds through pending_embedding_model.
    embedding_model = models.CharField(
        max_length=200, help_text="The model whose vectors are searched; re-index to change it."
    )
    chunk_profile = models.ForeignKey(
        ChunkProfile,
        on_delete=models.PROTECT,
        related_name="collections",
        help_text="The profile whose chunks are searched; re-index to change it.",
    )
    pending_chunk_profile = models.ForeignKey(
        ChunkProfile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="pending_collections",
        help_text="A re-index in progress: becomes the chunk profile once every document has its chunks.",
    )
    pending_embedding_model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="A re-embed in progress: becomes the model once every document has its new vectors.",
    )
    reindex_error = models.TextField(
        blank=True,
        default="",
        help_text="Why the last re-index stopped before its switch (e.g. a document over its uploader's "
        "chunk quota); cleared when a re-index is asked for again.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="unique_collection_name_per_owner"),
            models.UniqueConstraint(
                fields=["name"], condition=Q(owner__isnull=True), name="unique_admin_collection_name"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if not self.embedding_model:
            self.embedding_model = settings.KNOWLEDGE_EMBEDDING_MODEL
        super().save(*args, **kwargs)

    @property
    def reindex_target(self) -> tuple[int, str] | None:
        """(chunk profile id, embedding model) a re-index in progress writes; None when none is."""
        if not self.pending_chunk_profile_id and not self.pending_embedding_model:
            return None
        return (
            self.pending_chunk_profile_id or self.chunk_profile_id,
            self.pending_embedding_model or self.embedding_model,
        )

    @property
    def is_admin_owned(self) -> bool:
        return self.owner_id is None


class LinkGrant(models.Model):
    """``user`` opened the share link: they read the collection while unlisted and the link unchanged."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="link_grants")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="link_grants")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "collection"], name="one_link_grant_per_user")]

    def __str__(self) -> str:
        return f"{self.user} holds the link of {self.collection}"


class Subscription(models.Model):
    """A user's marketplace subscription to a listed collection."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="subscriptions")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="subscriptions")
    is_active = models.BooleanField(default=True)
    revoked_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set when the owner revokes it: no subscribing again until the owner reinstates the user.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "collection"], name="one_subscription_per_user")
        ]

    def __str__(self) -> str:
        state = "active" if self.is_active else "revoked" if self.revoked_at else "ended"
        return f"{self.user} -> {self.collection} ({state})"


class CollectionShare(models.Model):
    """The owner shared ``collection`` with a team (a Django group): its members read it, or also write it.

    Membership is read at query time (``user.groups``), so removing someone from the group takes the
    collection away from them at their next request.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="shares")
    group = models.ForeignKey("auth.Group", on_delete=models.CASCADE, related_name="collection_shares")
    can_write = models.BooleanField(
        default=False, help_text="Members may also upload, delete and re-index documents and sync sources."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who shared it (empty when that account is gone).",
    )

    class Meta:
        ordering = ["group__name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "group"], name="one_share_per_collection_group")
        ]

    def __str__(self) -> str:
        access = "read and write" if self.can_write else "read"
        return f"{self.collection} shared with {self.group} ({access})"
