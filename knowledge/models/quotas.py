"""Per-user quotas: the operator's overrides (Quota) and the ledger of questions and LLM tokens
(UsageDay). Resolution and enforcement are in knowledge.quotas."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

INHERIT = "Blank = inherit (the group's, then the default from the environment)."


class Quota(models.Model):
    """Limits for one user or one group; each blank field inherits."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="quota"
    )
    group = models.OneToOneField(Group, null=True, blank=True, on_delete=models.CASCADE, related_name="quota")
    unlimited = models.BooleanField(
        default=False,
        help_text="No limit for any field left blank here (e.g. staff or a service account); "
        "fields set here still apply.",
    )
    documents = models.PositiveIntegerField(null=True, blank=True, help_text=f"Documents stored. {INHERIT}")
    bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=f"Bytes of originals stored. {INHERIT}"
    )
    chunks = models.PositiveIntegerField(null=True, blank=True, help_text=f"Chunks stored. {INHERIT}")
    questions_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text=f"Questions asked per day. {INHERIT}"
    )
    llm_tokens_per_month = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=f"LLM tokens (input and output) per calendar month. {INHERIT}"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=False, group__isnull=True)
                | models.Q(user__isnull=True, group__isnull=False),
                name="quota_user_or_group",
                violation_error_message="A quota is for one user or one group: choose exactly one.",
            )
        ]

    def __str__(self) -> str:
        return f"quota of {self.user or f'group {self.group}'}"


class UsageDay(models.Model):
    """What one user asked and spent on one day; kept when chat sessions are deleted, so deleting
    history never resets a quota."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage_days")
    day = models.DateField()
    questions = models.PositiveIntegerField(default=0)
    llm_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-day"]
        constraints = [models.UniqueConstraint(fields=["user", "day"], name="one_usage_row_per_user_day")]

    def __str__(self) -> str:
        return f"{self.user} on {self.day}"
