"""The operator's LLM settings form: a write-only key, a checked endpoint, one row."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import AdminSite

from knowledge.admin.llm import LLMSettingsAdmin, LLMSettingsForm
from knowledge.models import LLMSettings

pytestmark = pytest.mark.django_db

FIELDS = {"enabled": "on", "base_url": "http://127.0.0.1:8080/v1", "model": "smollm2", "api_key": ""}


def submit(**changes) -> LLMSettingsForm:
    instance = LLMSettings.objects.filter(pk=1).first()
    form = LLMSettingsForm(data={**FIELDS, **changes}, instance=instance)
    assert form.is_valid(), form.errors
    form.save()
    return form


def test_the_key_is_kept_when_left_empty_and_forgotten_on_request():
    submit(api_key="sk-secret")
    assert LLMSettings.objects.get().api_key == "sk-secret"
    form = submit(model="other")  # key field left empty
    assert LLMSettings.objects.get().api_key == "sk-secret" and LLMSettings.objects.get().model == "other"
    assert "sk-secret" not in form.as_p()  # never rendered back
    submit(clear_api_key="on")
    assert LLMSettings.objects.get().api_key == ""
    assert LLMSettings.objects.count() == 1


def test_a_non_http_endpoint_is_refused():
    form = LLMSettingsForm(data={**FIELDS, "base_url": "ftp://models.example"})
    assert not form.is_valid() and "base_url" in form.errors


def test_one_row_only_and_the_effective_configuration_is_shown_without_the_key(monkeypatch):
    monkeypatch.setenv("LLM_MODEL", "env-model")
    model_admin = LLMSettingsAdmin(LLMSettings, AdminSite())
    assert model_admin.has_add_permission(request=None)
    row = LLMSettings.objects.create(base_url="http://127.0.0.1:9/v1", api_key="sk-hidden")
    assert not model_admin.has_add_permission(request=None)
    shown = model_admin.effective_configuration(row)
    assert "env-model" in shown and '"api_key": "set"' in shown.replace("&quot;", '"')
    assert "sk-hidden" not in shown
    LLMSettings(model="second").save()  # saving another instance updates the one row
    assert LLMSettings.objects.count() == 1 and LLMSettings.objects.get().model == "second"
