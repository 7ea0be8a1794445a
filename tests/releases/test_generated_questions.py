"""With an LLM configured, the gate also asks questions the LLM writes from sampled passages, and
keeps only those whose passage one of the releases retrieves."""

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


class QuestionWriter:
    """Writes a question made of the passage's own opening words, except for every third passage,
    which gets an off-topic question no release can answer from it (so the gate must drop it).

    Which passages the gate samples depends on the chunks' ids, so the off-topic ones are chosen by
    position, not by content: every run has some. Other requests are counted (and answered with
    text that is no question)."""

    def __init__(self):
        self.asked: list[str] = []
        self.off_topic = 0
        self.other: list[str] = []

    def __call__(self, request) -> Reply:
        content = request.messages[-1]["content"]
        if "Passage:\n" not in content:
            self.other.append(content[:200])
            return Reply(text="not a question request")
        passage = content.split("Passage:\n", 1)[1]
        self.asked.append(passage)
        if len(self.asked) % 3 == 0:
            self.off_topic += 1
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
    writer = QuestionWriter()
    llm_server.responder = writer
    collection_reindex(collection=handbook, chunk_profile=default_again)
    release = Release.objects.get(collection=handbook, chunk_profile=default_again)
    report = release.gate
    assert len(writer.asked) == GENERATED_QUESTIONS
    # Building the release read the same files: their summaries were kept, not asked of the LLM again.
    assert writer.other == []
    generated = report["origins"]["generated"]
    assert writer.off_topic == GENERATED_QUESTIONS // 3
    assert 0 < generated <= GENERATED_QUESTIONS - writer.off_topic
    assert report["questions"] == generated
    assert all(row["id"].startswith("generated-") for row in report["per_question"])
    assert OFF_TOPIC not in {row["question"] for row in report["per_question"]}
    assert release.state in ("serving", "held") and report["decision"] in ("promoted", "held")
