"""Admin for the operator's LLM settings (one row; empty fields fall back to the environment)."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.utils.html import format_html

from knowledge.clients.llm import llm_config
from knowledge.models import LLMSettings


class LLMSettingsForm(forms.ModelForm):
    """The key is write-only: shown as set or not, kept when the field is left empty."""

    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Leave empty to keep the stored key. Empty and none stored: OPENAI_API_KEY.",
    )
    clear_api_key = forms.BooleanField(required=False, help_text="Forget the stored key.")

    class Meta:
        model = LLMSettings
        fields = [
            "enabled",
            "base_url",
            "api_key",
            "clear_api_key",
            "model",
            "timeout_seconds",
            "max_retries",
            "temperature",
            "max_output_tokens",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The stored key is never the field's starting value: a typed key is then the only change.
        self.initial["api_key"] = ""

    def clean_base_url(self):
        url = self.cleaned_data["base_url"].strip()
        if url and not url.startswith(("http://", "https://")):
            raise forms.ValidationError("The endpoint must be an http:// or https:// URL.")
        return url

    def save(self, commit=True):
        stored = LLMSettings.objects.filter(pk=LLMSettings.SINGLETON_ID).values_list("api_key", flat=True)
        if self.cleaned_data.get("clear_api_key"):
            self.instance.api_key = ""
        elif not self.cleaned_data.get("api_key"):
            self.instance.api_key = next(iter(stored), "")
        return super().save(commit)


@admin.register(LLMSettings)
class LLMSettingsAdmin(admin.ModelAdmin):
    form = LLMSettingsForm
    list_display = ["__str__", "enabled", "model", "base_url", "updated_at"]
    readonly_fields = ["effective_configuration", "updated_at"]
    audit_name = "llm_settings"  # the key is recorded as "(changed)", never its value

    def has_add_permission(self, request):
        return not LLMSettings.objects.exists()

    @admin.display(description="In effect now")
    def effective_configuration(self, obj):
        try:
            described = llm_config().describe()
        except ImproperlyConfigured as exc:
            return format_html("<strong>Refused:</strong> {}", str(exc))
        return format_html("<pre>{}</pre>", json.dumps(described, indent=2))
