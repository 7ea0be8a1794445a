"""Refusals that say why, through POST /api/v1/query/ on a real document (no LLM: extracted answers).

Each test of the answerability verdict that knows its cause (a name the documents never mention, a
price or date no passage states, a language the embedding model does not read) refuses with that
cause first and the closest matches after it; switched off by its parameter, the question is answered
as before. Questions the documents do answer in other words are not refused by them.
"""

from __future__ import annotations

import pytest

from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.synthesis.refusal import CLOSEST_HEADING, NO_RESULTS_TEXT
from tests.asking import chat_ask

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)


def _collection(owner, path, name):
    collection = collection_create(name=name, owner=owner)
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    return collection


@pytest.fixture
def asker(alice, bearer, no_llm):
    """Ask over a collection: the API's answer; with parameter overrides (which /query/ does not
    take), the answer of the chat service it calls, in the same shape."""
    client = bearer(alice)

    def over(collection):
        def asked(question: str, **overrides) -> dict:
            if overrides:
                turn = chat_ask(
                    user=alice, question=question, collection_ids=[collection.pk], overrides=overrides
                )
                return {"mode": turn.mode, "answer": turn.answer, "citations": turn.cited_sources}
            body = {"question": question, "collections": [collection.pk]}
            response = client.post("/api/v1/query/", body, format="json")
            assert response.status_code == 200, response.content
            return response.json()

        return asked

    return over


@pytest.fixture
def ask(alice, corpus, asker):
    return asker(_collection(alice, corpus / "text" / "gravity_hill.md", "hills"))


def _refused(body: dict) -> bool:
    return body["mode"] == "no_results" and not body["citations"]


def test_a_name_the_documents_never_mention_is_named_in_the_refusal(ask):
    question = "What did NASA find when it measured the slope of a gravity hill?"
    body = ask(question)
    assert _refused(body), body["answer"]
    assert body["answer"].startswith("Your documents never mention NASA, so they cannot answer this.")
    assert CLOSEST_HEADING in body["answer"] and "- gravity_hill.md, " in body["answer"]
    assert not _refused(ask(question, refuseMissingTerms=False))


def test_the_users_own_identifiers_and_words_are_not_missing_names(ask):
    # my_slope_check.py is the asker's own file; "vehicle" is their word for the document's "car".
    for question in (
        "Why does my_slope_check.py show a vehicle rolling uphill on a gravity hill?",
        "Why does a vehicle left out of gear seem to roll uphill on a gravity hill?",
    ):
        body = ask(question)
        assert not _refused(body), (question, body["answer"])
        assert body["citations"][0]["document"] == "gravity_hill.md"


def test_a_price_no_passage_states_is_refused_with_the_kind_asked_for(ask):
    question = "How much does it cost to visit a gravity hill?"
    body = ask(question)
    assert _refused(body), body["answer"]
    assert body["answer"].startswith("The question asks for a price or amount, and none of the passages")
    assert CLOSEST_HEADING in body["answer"]
    assert not _refused(ask(question, refuseAnswerType=False))
    # A date the passages do state is answered.
    dated = ask("When was the study of gravity hills without a horizon done?")
    assert not _refused(dated) and "2003" in dated["answer"]


def test_a_german_question_to_an_english_only_model_says_how_to_change_the_model(ask):
    question = "Warum scheint ein Auto auf einem Schwerkrafthügel bergauf zu rollen?"
    body = ask(question)
    assert _refused(body), body["answer"]
    assert body["answer"].startswith("Your question seems to be in German, and the embedding model")
    assert "intfloat/multilingual-e5-small" in body["answer"] and "settings" in body["answer"]
    off = ask(question, refuseOtherLanguages=False)
    assert not off["answer"].startswith("Your question seems to be in German")


def test_an_unexplained_refusal_keeps_the_general_wording(ask):
    body = ask("What is the boiling point of liquid mercury?")
    assert _refused(body) and body["answer"].startswith(NO_RESULTS_TEXT)


def test_a_closest_match_holding_the_question_is_quoted_instead_of_refused(alice, corpus, asker):
    # "got" and "moniker" occur nowhere in the biography, so the question is "mostly absent"; its
    # other words (county, governor) are all in the passage that answers it.
    ask = asker(_collection(alice, corpus / "text" / "bates.txt", "bates"))
    question = "Which county got its moniker from the governor?"
    body = ask(question)
    assert not _refused(body), body["answer"]
    assert "Bates County" in body["answer"] and body["citations"][0]["document"] == "bates.txt"
    # Without it: "nothing on this", while the closest match listed holds the answer.
    off = ask(question, answerFromClosestMatch=False)
    assert _refused(off) and off["answer"].startswith(NO_RESULTS_TEXT)
    assert "Bates County" in off["answer"].split(CLOSEST_HEADING)[1]
