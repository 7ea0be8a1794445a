"""Three-tier configuration: admin lock > profile override > global default."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from knowledge.models import KnowledgeSetting, Profile
from knowledge.parameter_values import effective_config, global_setting_set
from knowledge.parameters import PARAMETERS, ConfigError, validate_value

SEED_DEFAULTS = {
    "maxDocs": 3,
    # Measured defaults (README, evaluation): no cosine cut before fusion; refuse below 0.18 answerability.
    "minRelevanceScore": 0.0,
    "minAnswerability": 0.18,
    "maxTokens": 2000,
    "maxChunksPerDocument": 0,
    "freshnessWeight": 0.0,
    "freshnessDecayRate": 0.005,
    "synthesisPromptOverride": "",
    "hybrid": True,
    # Chosen by leave-one-set-out over three question sets (README, evaluation).
    "semanticWeight": 0.65,
    # Chosen with the fusion's weight leave-one-set-out over four question sets (README, evaluation).
    "scoreFusion": True,
    "rrfK": 60,
    "spreadSources": True,
    "queryIntent": False,
    # The refusals that say why, and answering from a closest match (knowledge.retrieval.answerability).
    "refuseMissingTerms": True,
    "refuseAnswerType": True,
    "refuseOtherLanguages": True,
    "answerFromClosestMatch": True,
    # Multi-step retrieval (docs/design.md#agents): off by default.
    "agentic.enabled": False,
    "agentic.maxRetries": 2,
    "agentic.grading": True,
    "agentic.expansion": True,
    "agentic.decomposition": True,
    "agentic.hallucinationCheck": True,
    "agentic.strictCheck": False,
    "agentic.confidenceThreshold": 0.5,
    "agentic.minRelevant": 2,
    "agentic.routerTopK": 3,
    "agentic.maxPlanSteps": 4,
    "agentic.timeBudgetSeconds": 120.0,
    "agentic.tokenBudget": 30000,
}


def test_migrations_store_every_parameter_with_seed_defaults(db):
    rows = {row.key: row for row in KnowledgeSetting.objects.all()}
    assert set(rows) == set(PARAMETERS) == set(SEED_DEFAULTS)
    for key, default in SEED_DEFAULTS.items():
        assert rows[key].value == default
        assert rows[key].is_locked is False
        assert rows[key].help_text


@pytest.mark.parametrize(
    ("locked", "override", "expected_value", "expected_source"),
    [
        (False, None, 5, "global"),
        (False, 9, 9, "profile"),
        (True, 9, 5, "locked"),
        (True, None, 5, "locked"),
    ],
)
def test_resolution_table(db, locked, override, expected_value, expected_source):
    global_setting_set(key="maxDocs", value=5, lock=locked)
    overrides = {} if override is None else {"maxDocs": override}
    resolved = effective_config(overrides=overrides)["maxDocs"]
    assert (resolved.value, resolved.source) == (expected_value, expected_source)


def test_other_parameters_are_unaffected_by_one_lock(db):
    global_setting_set(key="maxDocs", value=7, lock=True)
    resolved = effective_config(overrides={"maxDocs": 2, "freshnessWeight": 0.4})
    assert resolved["maxDocs"].source == "locked"
    assert resolved["freshnessWeight"].value == 0.4
    assert resolved["freshnessWeight"].source == "profile"
    assert resolved["maxTokens"].source == "global"


def test_changes_take_effect_on_the_next_call_without_restart(db):
    assert effective_config()["minRelevanceScore"].value == 0.0
    global_setting_set(key="minRelevanceScore", value="0.55")
    assert effective_config()["minRelevanceScore"].value == 0.55


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("minRelevanceScore", 1.7, "at most 1.0"),
        ("minRelevanceScore", "-0.1", "at least 0.0"),
        ("maxDocs", "three", "must be a number"),
        ("maxDocs", 2.5, "whole number"),
        ("maxDocs", 0, "at least 1"),
        ("maxDocs", True, "must be a number"),
        ("minRelevanceScore", "nan", "must be a number"),
        ("maxTokens", "inf", "whole number"),
        ("hybrid", "maybe", "true or false"),
        ("synthesisPromptOverride", 12, "must be text"),
        ("synthesisPromptOverride", "x" * 20001, "at most 20000 characters"),
        ("noSuchKey", 1, "unknown parameter"),
    ],
)
def test_bad_values_are_refused_with_a_clear_message(key, raw, message):
    with pytest.raises(ConfigError, match=message):
        validate_value(key, raw)


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("maxDocs", "7", 7),
        ("maxDocs", 7.0, 7),
        ("minRelevanceScore", "0.45", 0.45),
        ("minRelevanceScore", 1, 1.0),
        ("hybrid", "false", False),
        ("hybrid", "1", True),
        ("synthesisPromptOverride", "Answer in French.", "Answer in French."),
    ],
)
def test_values_are_parsed_to_their_type(key, raw, expected):
    value = validate_value(key, raw)
    assert value == expected and type(value) is type(expected)


def test_profile_overrides_are_validated(db, alice):
    profile = Profile(owner=alice, name="HR", tag="hr", knowledge_overrides={"maxDocs": 500})
    with pytest.raises(ValidationError, match="at most 100"):
        profile.full_clean()
    profile.knowledge_overrides = {"maxDocs": "12"}
    profile.full_clean()
    assert profile.knowledge_overrides == {"maxDocs": 12}


def _config_json(*args) -> dict:
    from io import StringIO

    out = StringIO()
    call_command("knowledge_config", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_knowledge_config_command_lock_and_unlock(db, alice):
    Profile.objects.create(owner=alice, name="Support", tag="support", knowledge_overrides={"maxDocs": 4})
    before = _config_json("--profile", "Support")
    assert before["maxDocs"] == {"value": 4, "source": "profile"}
    assert set(before) == set(PARAMETERS)

    call_command("knowledge_config", "--set", "maxDocs=7", "--lock")
    assert _config_json("--profile", "Support")["maxDocs"] == {"value": 7, "source": "locked"}

    call_command("knowledge_config", "--unlock", "maxDocs")
    assert _config_json("--profile", "Support")["maxDocs"] == {"value": 4, "source": "profile"}
    assert _config_json()["maxDocs"] == {"value": 7, "source": "global"}


def test_knowledge_config_command_refuses_bad_values_and_stores_nothing(db):
    with pytest.raises(CommandError, match="minRelevanceScore must be at most 1.0"):
        call_command("knowledge_config", "--set", "minRelevanceScore=1.7")
    with pytest.raises(CommandError, match="hybrid must be true or false"):
        call_command("knowledge_config", "--set", "maxDocs=9", "--set", "hybrid=nope")
    assert KnowledgeSetting.objects.get(key="maxDocs").value == 3
    assert KnowledgeSetting.objects.get(key="minRelevanceScore").value == 0.0
    with pytest.raises(CommandError, match="KEY=VALUE"):
        call_command("knowledge_config", "--set", "maxDocs")
    with pytest.raises(CommandError, match="no profile named"):
        call_command("knowledge_config", "--profile", "nobody", "--json")


def test_knowledge_config_command_exits_non_zero(db):
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    result = subprocess.run(
        [sys.executable, "manage.py", "knowledge_config", "--set", "minRelevanceScore=1.7"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"},
    )
    assert result.returncode != 0
    assert "minRelevanceScore must be at most 1.0" in result.stderr
