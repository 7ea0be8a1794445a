from django.db import models


class RateCounter(models.Model):
    """Request counts of one throttle key (scope and client) in its current and previous period.

    Written by one INSERT ... ON CONFLICT per request (knowledge.rate_limits): the
    API's rate limits cost a single round trip, shared by every server process.
    """

    key = models.CharField(max_length=255, primary_key=True)
    window_index = models.BigIntegerField(help_text="Unix time divided by the period.")
    current = models.PositiveIntegerField(default=0)
    previous = models.PositiveIntegerField(default=0)
    allowed = models.BooleanField(default=True, help_text="Whether the last request was let through.")
    touched_at = models.DateTimeField(db_index=True)  # rows silent for a day are pruned by the workers

    def __str__(self) -> str:
        return f"{self.key}: {self.current} (+{self.previous} before)"
