"""Sources a collection follows (a web site, a Git repository, a server folder), what was read from
them, and the history of their syncs (knowledge.services.sources)."""

from django.conf import settings
from django.db import models

from knowledge.models.collections import Collection
from knowledge.models.documents import Document


class Source(models.Model):
    class Kind(models.TextChoices):
        WEB = "web", "Web site"
        GIT = "git", "Git repository"
        FOLDER = "folder", "Server folder"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    location = models.CharField(
        max_length=2000, help_text="The start URL or sitemap, repository URL or folder."
    )
    # Per kind: web {"path_prefix", "max_depth", "max_pages"}; git {"branch", "globs"}; folder {"globs"}.
    options = models.JSONField(default=dict, blank=True)
    interval_hours = models.PositiveIntegerField(
        null=True, blank=True, help_text="Sync by itself every this many hours (empty: only when asked)."
    )
    cron = models.CharField(
        max_length=100,
        blank=True,
        help_text='Or sync on a cron expression, e.g. "0 6 * * 1-5" (server time).',
    )
    grace_hours = models.PositiveIntegerField(
        default=24, help_text="An item gone from the source is removed from the collection after this long."
    )
    # Where the last successful sync left off (a Git commit).
    cursor = models.CharField(max_length=100, blank=True)
    # What the source's copy on this server (a Git mirror) took on disk after its last sync: the
    # collection owner's storage, counted by knowledge.quotas.
    disk_bytes = models.PositiveBigIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection_id", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "kind", "location"], name="source_unique_location")
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.location}"


class SourceItem(models.Model):
    """One page or file of a source, and the document it became."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=2000, help_text="The page's URL or the file's path.")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The source made this document (not the same bytes uploaded before): it may remove it.
    owns_document = models.BooleanField(default=False)
    # Where a citation links to: the page's URL, or the file at the synced commit.
    origin_url = models.CharField(max_length=2000, blank=True)
    etag = models.CharField(max_length=500, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    seen_at = models.DateTimeField(null=True, blank=True)
    gone_since = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["source_id", "key"]
        constraints = [models.UniqueConstraint(fields=["source", "key"], name="source_item_unique_key")]

    def __str__(self) -> str:
        return self.key


class SourceSync(models.Model):
    """One sync of a source: what it found, and each failure with its reason."""

    class Status(models.TextChoices):
        RUNNING = "running", "Syncing"
        SUCCEEDED = "succeeded", "Synced"
        FAILED = "failed", "Failed"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="syncs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    trigger = models.CharField(max_length=20, help_text="schedule, page, api, admin or command")
    stage = models.CharField(max_length=300, blank=True)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    chunks_embedded = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True, help_text='[{"item": key, "reason": text}, ...]')
    error = models.TextField(blank=True, help_text="Why the whole sync failed.")
    # The documents this sync added or replaced (their chunks are the ones it embedded).
    document_ids = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The process running it (host:pid) and its last beat: a running sync whose beats stopped lost its
    # process, and the workers' sweep fails it (knowledge.services.sync_liveness.syncs_fail_stale).
    worker = models.CharField(max_length=300, blank=True)
    beat_at = models.DateTimeField(null=True, blank=True)
    # The request it answers (a queued task's): a task delivered twice finds it and does not run again.
    ticket = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.get_status_display()} ({self.trigger}, {self.started_at:%Y-%m-%d %H:%M})"
