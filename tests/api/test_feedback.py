"""Rating answers (POST /api/v1/sessions/{id}/turns/{n}/feedback/), renaming and deleting sessions,
and turning the helpful answers into an evaluation question set (knowledge_eval_import --from-feedback).
"""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from knowledge.evaluation.questions import load_questions
from knowledge.models import ChatSession, ChatTurn, EvalSet
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

CITED = [
    {"n": 1, "document": "pasa.pdf", "source_ref": "page=3", "title": "PaSa", "text": "..."},
    {"n": 2, "document": "pasa.pdf", "source_ref": "page=3", "title": "PaSa", "text": "..."},
    {"n": 3, "document": "flag_day.html", "source_ref": "heading=History", "title": "Flag", "text": "..."},
]


def answered(user, question="How big is the training set?", **fields) -> ChatTurn:
    session = ChatSession.objects.create(user=user, title=question)
    defaults = {"answer": "33,511 pairs [Source 1].", "mode": "llm", "cited_sources": CITED}
    return ChatTurn.objects.create(session=session, index=0, question=question, **(defaults | fields))


def feedback_url(turn: ChatTurn, index: int | None = None) -> str:
    return f"/api/v1/sessions/{turn.session_id}/turns/{turn.index if index is None else index}/feedback/"


def test_a_rating_with_a_comment_is_stored_on_the_turn_and_rating_again_replaces_it(bearer, alice):
    turn = answered(alice)
    api = bearer(alice)
    response = api.post(feedback_url(turn), {"rating": "down", "comment": "  wrong page  "}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["session"], body["turn"], body["rating"], body["comment"]) == (
        turn.session_id,
        0,
        "down",
        "wrong page",
    )
    assert api.post(feedback_url(turn), {"rating": "up"}, format="json").status_code == 200
    turn.refresh_from_db()
    assert (turn.feedback_rating, turn.feedback_comment) == ("up", "")
    assert turn.feedback_at is not None
    detail = api.get(f"/api/v1/sessions/{turn.session_id}/").json()
    assert detail["turns"][0]["feedback"] == {"rating": "up", "comment": ""}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"rating": "meh"}, "rating"),
        ({}, "rating"),
        ({"rating": "up", "comment": "x" * 2001}, "comment"),
        ({"rating": "up", "stars": 5}, "stars"),
    ],
)
def test_bad_feedback_is_a_400_in_the_usual_format_and_keeps_the_stored_rating(bearer, alice, body, field):
    turn = answered(alice, feedback_rating="up", feedback_comment="kept")
    error = assert_error(bearer(alice).post(feedback_url(turn), body, format="json"), 400)
    assert field in error["fields"]
    turn.refresh_from_db()
    assert (turn.feedback_rating, turn.feedback_comment) == ("up", "kept")


def test_a_question_that_was_never_answered_cannot_be_rated(bearer, alice):
    turn = answered(alice, mode="", answer="")
    error = assert_error(bearer(alice).post(feedback_url(turn), {"rating": "up"}, format="json"), 400)
    assert "not answered" in error["message"]


def test_nobody_rates_renames_or_deletes_another_users_session(bearer, alice, charlie, anon):
    turn = answered(alice)
    as_charlie = bearer(charlie)
    assert_error(as_charlie.post(feedback_url(turn), {"rating": "down"}, format="json"), 404)
    assert_error(
        as_charlie.patch(f"/api/v1/sessions/{turn.session_id}/", {"title": "mine"}, format="json"), 404
    )
    assert_error(as_charlie.delete(f"/api/v1/sessions/{turn.session_id}/"), 404)
    assert_error(anon.post(feedback_url(turn), {"rating": "down"}, format="json"), 401)
    assert_error(bearer(alice).post(feedback_url(turn, index=7), {"rating": "up"}, format="json"), 404)
    turn.refresh_from_db()
    assert turn.feedback_rating == "" and turn.session.title == turn.question


def test_sessions_are_renamed_and_deleted_with_their_turns(bearer, alice):
    turn = answered(alice)
    api = bearer(alice)
    url = f"/api/v1/sessions/{turn.session_id}/"
    renamed = api.patch(url, {"title": "  Training   set  "}, format="json")
    assert renamed.status_code == 200 and renamed.json()["title"] == "Training set"
    assert_error(api.patch(url, {"title": "   "}, format="json"), 400)
    assert ChatSession.objects.get(pk=turn.session_id).title == "Training set"
    assert api.delete(url).status_code == 204
    assert not ChatTurn.objects.filter(pk=turn.pk).exists()
    assert_error(api.get(url), 404)


def test_helpful_answers_become_a_question_set_that_knowledge_eval_loads(alice, bob, tmp_path):
    helpful = answered(alice, feedback_rating="up", resolved_question="How big is PaSa's training set?")
    answered(bob, "What is flag day?", feedback_rating="down", feedback_comment="off topic")
    nothing = answered(
        bob, "Who won in 1700?", mode="no_results", answer="Nothing on this.", cited_sources=[]
    )
    nothing.feedback_rating = "up"
    nothing.save()
    answered(alice, "Not rated")
    out = tmp_path / "feedback.jsonl"

    call_command("knowledge_eval_import", "--name", "from users", "--from-feedback", "--out", str(out))

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {line["question"] for line in lines} == {"How big is PaSa's training set?", "Who won in 1700?"}
    mine = next(line for line in lines if line["id"] == f"feedback-{helpful.session_id}-0")
    assert mine["expected_sources"] == [
        {"document": "pasa.pdf", "source_ref": "page=3"},
        {"document": "flag_day.html", "source_ref": "heading=History"},
    ]
    assert mine["answer"] == helpful.answer and mine["kind"] == "feedback"
    loaded = load_questions(out)
    assert loaded.errors == [] and len(loaded.questions) == 2
    assert sorted(q.answerable for q in loaded.questions) == [False, True]
    stored = EvalSet.objects.get(name="from users")
    assert stored.questions.count() == 2


def test_with_nothing_rated_helpful_the_export_fails_and_replaces_nothing(alice):
    EvalSet.objects.create(name="from users").questions.create(external_id="q1", question="kept?")
    answered(alice, feedback_rating="down")
    with pytest.raises(CommandError, match="no answer has been rated helpful"):
        call_command("knowledge_eval_import", "--name", "from users", "--from-feedback")
    assert EvalSet.objects.get(name="from users").questions.get().question == "kept?"
    with pytest.raises(CommandError, match="--out needs --from-feedback"):
        call_command("knowledge_eval_import", "--name", "x", "--jsonl", "a.jsonl", "--out", "b.jsonl")
