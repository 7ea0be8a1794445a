"""knowledge_eval --answers: the multi-step metrics, standard against agentic, with --set overrides."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from tests.agents.script import AgentModel, passage_count, reply_json

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db

AGENTIC_KEYS = (
    "retry_rate",
    "rewrite_rate",
    "expansion_rate",
    "hallucination_detection_rate",
    "avg_retrieval_rounds",
    "graded_relevant_ratio",
)
QUESTIONS = [
    {
        "id": "g",
        "question": "Why does a car seem to roll uphill on a gravity hill?",
        "expected_sources": [{"document": "gravity_hill.md", "source_ref": "heading=Gravity hill"}],
        "answer": "The layout of the land makes a slight downhill slope look like an uphill slope.",
    },
    {
        "id": "f",
        "question": "On what date is National Flag of Canada Day observed?",
        "expected_sources": [
            {"document": "flag_day.html", "source_ref": "heading=National Flag of Canada Day"}
        ],
        "answer": "February 15.",
    },
]


def evaluate(kb, tmp_path, *settings):
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    out = io.StringIO()
    args = ["--collection", kb.collection.name, "--user", kb.user.username, "--questions", str(path)]
    for setting in settings:
        args += ["--set", setting]
    call_command("knowledge_eval", *args, "--answers", "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue().splitlines()[-1]), out.getvalue()


def test_standard_and_agentic_runs_report_the_agentic_metrics(kb, tmp_path, llm_env):
    model = AgentModel()
    model.script("classify", {"type": "standard"}, {"type": "standard"})
    # The first question's first grading passes nothing: one rewrite; its first answer is flagged: one retry.
    model.script("grade", lambda r: reply_json({"scores": [0.0] * passage_count(r)}))
    model.script("check", {"claims": [{"claim": "Flag Day is in June", "supported": False}]})
    llm_env.responder = model

    standard, _ = evaluate(kb, tmp_path)
    assert standard["agentic_answers"] == 0
    assert {k: standard[k] for k in AGENTIC_KEYS} == {
        "retry_rate": 0.0,
        "rewrite_rate": 0.0,
        "expansion_rate": 0.0,
        "hallucination_detection_rate": 0.0,
        "avg_retrieval_rounds": 1.0,
        "graded_relevant_ratio": None,
    }
    assert standard["llm_calls_per_answer"] == 1.0

    agentic, table = evaluate(kb, tmp_path, "agentic.enabled=true")
    assert agentic["agentic_answers"] == 2
    assert agentic["rewrite_rate"] == 0.5 and agentic["retry_rate"] == 0.5
    assert agentic["hallucination_detection_rate"] == 0.5 and agentic["expansion_rate"] == 1.0
    assert agentic["avg_retrieval_rounds"] == 2.0  # 3 rounds (1 + rewrite + retry) and 1 round
    assert 0 < agentic["graded_relevant_ratio"] < 1
    assert agentic["llm_calls_per_answer"] > standard["llm_calls_per_answer"]
    assert agentic["answer_latency_ms"]["p50"] > 0
    assert "answering: agentic_answers 2" in table
    assert agentic["settings"] == {"agentic.enabled": True}


def test_an_unknown_agentic_setting_is_refused(kb, tmp_path, no_llm):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="agentic.maxRetries must be at most 5"):
        evaluate(kb, tmp_path, "agentic.enabled=true", "agentic.maxRetries=9")
