"""With an LLM configured, the gate also asks questions the LLM writes from sampled passages, and
keeps only those whose passage one of the releases retrieves (issue 32)."""

from __future__ import annotations

import json
import re

import pytest

from knowledge.evaluation.gate_questions import GENERATED_QUESTIONS
from knowledge.models import Release
from knowledge.services.collections import collection_reindex
from tests.synthesis.openai_server import Reply

pytest_plugins = ["tests.synthesis.openai_server"]  # the llm_server and llm_env fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

OFF_TOPIC = "What is the airspeed of an unladen swallow over the Andes?"


def question_from_passage(request) -> Reply:
    """A question made of the passage's own opening words; passages about pets get an off-topic one,
    which no release can answer from its passage (so the gate must drop it)."""
    passage = request.messages[-1]["content"].split("Passage:\n", 1)[1]
    if "pet" in passage.lower():
        return Reply(text=json.dumps({"question": OFF_TOPIC}))
    words = re.findall(r"[A-Za-z][A-Za-z'-]+", passage)[:14]
    return Reply(text="Sure. " + json.dumps({"question": " ".join(words) + "?"}))


def test_the_gate_writes_questions_from_passages_and_keeps_those_a_release_retrieves(
    alice,
    handbook,
    default_again,
    llm_server,
    llm_env,
):
    handbook.gate_eval_sets.clear()
    llm_server.responder = question_from_passage
    collection_reindex(collection=handbook, chunk_profile=default_again)
    release = Release.objects.get(collection=handbook, chunk_profile=default_again)
    report = release.gate
    asked = [r for r in llm_server.requests if "Passage:" in r.messages[-1]["content"]]
    assert len(asked) == GENERATED_QUESTIONS
    generated = report["origins"]["generated"]
    off_topic = sum(
        1 for r in asked if question_from_passage(r).text.endswith(json.dumps({"question": OFF_TOPIC}))
    )
    assert 0 < generated <= GENERATED_QUESTIONS - off_topic < GENERATED_QUESTIONS
    assert report["questions"] == generated
    assert all(row["id"].startswith("generated-") for row in report["per_question"])
    assert OFF_TOPIC not in {row["question"] for row in report["per_question"]}
    assert release.state in ("serving", "held") and report["decision"] in ("promoted", "held")
