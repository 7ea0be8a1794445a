"""An agentic answer searches in several rounds; a rollback that commits between two of them must
not mix two releases in one answer."""

from __future__ import annotations

import pytest
from django.db import connection

from knowledge.models import Chunk, Release
from knowledge.services.collections import collection_reindex
from knowledge.services.releases import release_rollback
from tests.agents.conftest import AGENTIC
from tests.agents.script import AgentModel, passage_count, reply_json
from tests.asking import chat_ask

pytest_plugins = ["tests.synthesis.openai_server"]  # the llm_server fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_rollback_between_two_rounds_of_an_answer_does_not_change_the_release_it_reads(
    alice, handbook, default_again, llm_server, monkeypatch
):
    # The gate has the handbook's questions and measures the same settings: it promotes.
    collection_reindex(collection=handbook, chunk_profile=default_again)
    answering = Release.objects.get(collection=handbook, chunk_profile=default_again)
    assert answering.state == Release.State.SERVING, answering.reason

    rolled_back = []

    def weak_grades_then_roll_back(request):
        """The first round's passages are graded weak, so the loop rewrites and searches again; the
        rollback commits (from the server's thread) before that second round."""
        rolled_back.append(release_rollback(collection=handbook))
        connection.close()
        return reply_json({"scores": [0.1] * passage_count(request)})

    model = AgentModel()
    model.script("classify", {"type": "standard"})
    model.script("grade", weak_grades_then_roll_back)
    llm_server.responder = model
    for name, value in {
        "OPENAI_BASE_URL": llm_server.url,
        "OPENAI_API_KEY": "test-key",
        "LLM_MODEL": "test-model",
        "LLM_MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)

    turn = chat_ask(
        user=alice,
        question="Why does a car seem to roll uphill on a gravity hill?",
        collection_ids=[handbook.pk],
        overrides=AGENTIC,
    )

    assert model.steps.count("grade") == 2 and len(rolled_back) == 1  # two rounds, the switch between
    handbook.refresh_from_db()
    assert handbook.chunk_profile_id != default_again.pk  # the rollback served the first release again
    cited = [source["chunk_id"] for source in turn.cited_sources]
    assert cited, turn.answer
    profiles = set(Chunk.objects.filter(pk__in=cited).values_list("chunk_profile_id", flat=True))
    assert profiles == {default_again.pk}  # every passage from the release serving when it was asked
