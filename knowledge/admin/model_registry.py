"""Admin for the embedding and rerank endpoints an operator registers (docs/operator-guide/models.md).

Saving calls the endpoint once (an embedding endpoint's dimension is learnt so);
one that cannot answer is refused with the reason, and nothing is stored. The key
is write-only, as the LLM's is.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from config.base.errors import KnowledgeError
from knowledge.models import Collection, EmbeddingEndpoint, RerankEndpoint
from knowledge.services.model_endpoints import (
    embedding_endpoint_checked,
    embedding_endpoint_delete,
    embedding_endpoint_store,
    endpoint_in_use,
    rerank_endpoint_checked,
)


class _WriteOnlyKeyForm(forms.ModelForm):
    """The key is never shown: left empty, the stored one is kept. ``checked`` is the service's
    check of an unsaved endpoint holding the form's values (one call to the endpoint)."""

    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Sent as a bearer token. Leave empty to keep the stored key; none for Ollama or TEI.",
    )
    clear_api_key = forms.BooleanField(required=False, help_text="Forget the stored key.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["api_key"] = ""

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        model = type(self.instance)
        stored = model.objects.filter(pk=self.instance.pk).values_list("api_key", flat=True)
        if cleaned.get("clear_api_key"):
            cleaned["api_key"] = ""
        elif not cleaned.get("api_key"):
            cleaned["api_key"] = next(iter(stored), "")
        # The instance takes the cleaned values only after clean() (ModelForm._post_clean): the
        # endpoint is checked on a copy holding them.
        candidate = model(pk=self.instance.pk)
        candidate._state.adding = self.instance._state.adding  # an edit is not checked as a new row
        for field in self.Meta.fields:
            if field != "clear_api_key" and field in cleaned:
                setattr(candidate, field, cleaned[field])
        try:
            self.checked(candidate)
        except KnowledgeError as exc:
            raise forms.ValidationError(str(exc)) from None
        return cleaned

    def checked(self, candidate) -> None:
        raise NotImplementedError


class EmbeddingEndpointForm(_WriteOnlyKeyForm):
    class Meta:
        model = EmbeddingEndpoint
        fields = [
            "name",
            "base_url",
            "model",
            "api_key",
            "clear_api_key",
            "multilingual",
            "query_prefix",
            "passage_prefix",
            "batch_size",
            "max_input_tokens",
            "timeout_seconds",
            "max_retries",
        ]

    def checked(self, candidate) -> None:
        candidate.dimensions = self.instance.dimensions
        self._dimensions = embedding_endpoint_checked(candidate).dimensions

    def save(self, commit=True):
        instance = super().save(commit=False)
        instance.dimensions = self._dimensions  # learnt by the check; not a form field
        if commit:
            embedding_endpoint_store(instance)
        return instance


class RerankEndpointForm(_WriteOnlyKeyForm):
    class Meta:
        model = RerankEndpoint
        fields = ["name", "base_url", "model", "api_key", "clear_api_key", "timeout_seconds"]

    def checked(self, candidate) -> None:
        rerank_endpoint_checked(candidate)


class _EndpointAdmin(admin.ModelAdmin):
    @admin.display(description="Key")
    def key_stored(self, obj) -> str:
        return "stored" if obj.api_key else "none"


@admin.register(EmbeddingEndpoint)
class EmbeddingEndpointAdmin(_EndpointAdmin):
    form = EmbeddingEndpointForm
    list_display = ["name", "model", "base_url", "dimensions", "collections_using", "updated_at"]
    readonly_fields = ["dimensions", "key_stored", "collections_using", "created_at", "updated_at"]
    audit_name = "embedding_endpoint"  # the key is recorded as "(changed)", never its value

    @admin.display(description="Collections")
    def collections_using(self, obj) -> int:
        return Collection.objects.filter(embedding_model=obj.name).count()

    def save_model(self, request, obj, form, change):
        embedding_endpoint_store(obj)

    def has_delete_permission(self, request, obj=None):
        # One in use cannot go: its chunks' vectors mean nothing without it (the service refuses too).
        return super().has_delete_permission(request, obj) and (obj is None or not endpoint_in_use(obj.name))

    def delete_model(self, request, obj):
        embedding_endpoint_delete(obj)

    def delete_queryset(self, request, queryset):
        for endpoint in queryset:
            try:
                embedding_endpoint_delete(endpoint)
            except KnowledgeError as exc:
                messages.error(request, str(exc))


@admin.register(RerankEndpoint)
class RerankEndpointAdmin(_EndpointAdmin):
    form = RerankEndpointForm
    list_display = ["name", "model", "base_url", "profiles_using", "updated_at"]
    readonly_fields = ["key_stored", "profiles_using", "created_at", "updated_at"]
    audit_name = "rerank_endpoint"  # the key is recorded as "(changed)", never its value

    @admin.display(description="Profiles")
    def profiles_using(self, obj) -> int:
        return obj.profiles.count()

    def has_delete_permission(self, request, obj=None):
        # A profile's reranker goes only when no profile names it (PROTECT).
        return super().has_delete_permission(request, obj) and (obj is None or not obj.profiles.exists())
