from django.core.exceptions import ValidationError
from django.db import models

from knowledge.parameters import ConfigError, parameter, validate_value


class KnowledgeSetting(models.Model):
    """One global knowledge parameter: its value and whether the admin locked it.

    The parameters themselves (type, range, default) are declared once in
    ``knowledge.parameters.PARAMETERS``; a row here holds the operator's value.
    """

    key = models.CharField(max_length=64, unique=True)
    value = models.JSONField()
    is_locked = models.BooleanField(
        default=False, help_text="Locked: this value applies to every profile, overrides ignored."
    )
    help_text = models.TextField(blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        verbose_name = "global knowledge setting"

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        try:
            spec = parameter(self.key)
            self.value = validate_value(self.key, self.value)
        except ConfigError as exc:
            raise ValidationError({"value": str(exc)}) from exc
        self.help_text = spec.help_text
