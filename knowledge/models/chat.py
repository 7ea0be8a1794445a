from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from knowledge.models.profiles import Profile


class ChatSession(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions")
    profile = models.ForeignKey(
        Profile, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions"
    )
    title = models.CharField(max_length=200, blank=True)
    collection_ids = ArrayField(
        models.BigIntegerField(),
        default=list,
        blank=True,
        help_text="Collections searched when the session has no profile (a collection alone).",
    )
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or f"Session {self.pk}"


class ChatTurn(models.Model):
    class Mode(models.TextChoices):
        # The words pages show for each (templates/knowledge/chat.html and static/js/chat.js read them).
        LLM = "llm", "Written by the language model"
        EXTRACTIVE = "extractive", "Quoted from your documents"
        NO_RESULTS = "no_results", "Not covered by your documents"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField()
    question = models.TextField()
    resolved_question = models.TextField(blank=True, help_text="The question after resolving follow-ups.")
    answer = models.TextField(blank=True)
    mode = models.CharField(max_length=12, choices=Mode.choices, blank=True)
    cited_sources = models.JSONField(default=list, blank=True)
    retrieved = models.JSONField(default=list, blank=True)
    # A refusal's closest matches, for its lines to link to their places (knowledge.synthesis.refusal).
    # db_default as well: a web process still running the previous version during an upgrade
    # inserts turns without this column, and must not fail on it.
    closest = models.JSONField(default=list, db_default=[], blank=True)
    dropped_citations = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    token_source = models.CharField(max_length=10, blank=True, help_text="usage or estimate")
    events = models.JSONField(default=list, blank=True)
    durations_ms = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, help_text="LLM failure that led to the fallback, if any.")
    llm_model = models.CharField(max_length=200, blank=True, help_text="The model that wrote the answer.")

    # The asker's rating of the answer (thumbs up or down) and an optional comment, for review
    # in the admin and for export as evaluation questions.
    class Rating(models.TextChoices):
        UP = "up", "Helpful"
        DOWN = "down", "Not helpful"

    feedback_rating = models.CharField(max_length=4, choices=Rating.choices, blank=True)
    feedback_comment = models.TextField(blank=True)
    feedback_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session_id", "index"]
        constraints = [models.UniqueConstraint(fields=["session", "index"], name="one_turn_per_position")]

    def __str__(self) -> str:
        return self.question[:80]


class RatedAnswer(ChatTurn):
    """The turns their askers rated, as the admin lists them for review and export."""

    class Meta:
        proxy = True
        verbose_name = "rated answer"
        ordering = ["-feedback_at"]
