"""The database connection is given back while the LLM works (ARCHITECTURE 10, paperless-ngx 12976).

Transactional: the upload's processing task runs on commit, and the chat runs
outside any transaction, as in a web request with autocommit.
"""

from __future__ import annotations

import pytest
from django.db import connections

from knowledge.models import ChatTurn, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import chat_ask
from tests.synthesis.openai_server import Reply

# The loopback LLM server's fixtures: llm_server, llm_env, no_llm.
pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)


def test_the_connection_is_closed_during_llm_calls_and_reopened_after(alice, corpus, llm_env):
    collection = collection_create(name="hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    ).document
    document.refresh_from_db()
    assert document.status == Document.Status.READY, document.error

    wrapper = connections["default"]  # this thread's connection, seen from the server's thread
    held_during_calls = []
    llm_env.on_request = lambda request: held_during_calls.append(wrapper.connection is not None)
    llm_env.script(
        Reply(text="A gravity hill is an illusion [Source 1]."),
        Reply(text="Why does the gravity hill illusion happen?"),  # the follow-up rewrite
        Reply(text="A hidden horizon [Source 2]."),
    )
    first = chat_ask(
        user=alice,
        question="What is a gravity hill and why do cars roll uphill?",
        collection_ids=[collection.pk],
    )
    second = chat_ask(user=alice, question="Why does it happen?", session=first.session_id)

    assert held_during_calls == [False, False, False]  # synthesis, rewrite, synthesis
    assert (first.mode, second.mode) == (ChatTurn.Mode.LLM, ChatTurn.Mode.LLM)
    assert ChatTurn.objects.filter(session_id=first.session_id).count() == 2  # saved after reconnecting
    assert second.resolved_question == "Why does the gravity hill illusion happen?"
