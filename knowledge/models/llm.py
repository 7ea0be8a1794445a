from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class LLMSettings(models.Model):
    """The operator's LLM endpoint, one row. An empty field falls back to the environment.

    Environment: OPENAI_BASE_URL, OPENAI_API_KEY (or OPENAI_API_KEY_FILE),
    LLM_MODEL, LLM_TIMEOUT, LLM_MAX_RETRIES, LLM_TEMPERATURE,
    LLM_MAX_OUTPUT_TOKENS, LLM_STREAM. See knowledge.clients.llm.
    """

    SINGLETON_ID = 1

    enabled = models.BooleanField(
        default=True,
        help_text="Off: answers are always extracted from the sources; no language model is called.",
    )
    base_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1. Empty: OPENAI_BASE_URL.",
    )
    api_key = models.CharField(max_length=500, blank=True, help_text="Empty: OPENAI_API_KEY.")
    model = models.CharField(max_length=200, blank=True, help_text="Model name. Empty: LLM_MODEL.")
    timeout_seconds = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(600)],
        help_text="Per request, seconds. Empty: LLM_TIMEOUT (default 60).",
    )
    max_retries = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(10)],
        help_text="Retries of a failed request (429, 5xx, connection). Empty: LLM_MAX_RETRIES (default 2).",
    )
    temperature = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(2)],
        help_text="Empty: LLM_TEMPERATURE (default 0.1).",
    )
    max_output_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(16), MaxValueValidator(32000)],
        help_text="Longest answer, in tokens. Empty: LLM_MAX_OUTPUT_TOKENS (default 1024).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "LLM settings"
        verbose_name_plural = "LLM settings"
        constraints = [models.CheckConstraint(condition=models.Q(id=1), name="llm_settings_singleton")]

    def __str__(self) -> str:
        return "LLM settings"

    def save(self, *args, **kwargs):
        self.pk = self.SINGLETON_ID
        super().save(*args, **kwargs)

    @classmethod
    def load(cls) -> "LLMSettings":
        """The stored row, or an unsaved one with every field empty (environment only)."""
        return cls.objects.filter(pk=cls.SINGLETON_ID).first() or cls(pk=cls.SINGLETON_ID)
