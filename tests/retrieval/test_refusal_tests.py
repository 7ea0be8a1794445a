"""The explained refusal tests' pure parts: names in a question, the kind of value asked for, the
question's language; and how the verdict applies them, each switchable."""

from __future__ import annotations

import pytest

from knowledge.retrieval.answer_type import AMOUNT, DATE, DURATION, asked_kind, holds_kind
from knowledge.retrieval.answerability import (
    MAX_ABSENT,
    OVERRULED_NOTE,
    REASON_ABSENT,
    REASON_ANSWER_TYPE,
    REASON_LANGUAGE,
    REASON_MISSING_TERM,
    Checks,
    Evidence,
    holds_question,
    overrulable,
    overruled,
    verdict_for,
)
from knowledge.retrieval.named_terms import named_terms
from knowledge.text.language import foreign_language

STRONG = dict(best_similarity=0.7, margin=0.3, coverage=0.9, agreement=1.0)


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("How do I add TOTP to the login page?", ["TOTP"]),
        (
            "What was Obama's LSAT score when he applied to Harvard Law School?",
            ["Obama", "LSAT", "Harvard Law School"],
        ),
        ("Where exactly is the Magnetic Hill in New Brunswick?", ["Magnetic Hill", "New Brunswick"]),
        ("How do I set up WebSocket consumers with Django Channels?", ["WebSocket", "Django Channels"]),
        (
            'Is "row locking" safe in Python 3.11 since 2024?',
            ["row locking", "Python", "3.11", "2024"],
        ),
        ("What nDCG@10 does it reach?", ["nDCG@10"]),
        # The asker's own identifiers and ordinary words are not names.
        ("Why does my_filters.py fail to register my filter?", []),
        ("Why does `my_filters.py` fail with “relation does not exist” here?", []),
        ("What is the value of myCounter after the loop in views.py?", []),
        ("What processor does it use?", []),
        # An exception is what the asker saw; the documentation explains its cause in other words.
        ("TypeError in my signal handler: why must receivers take **kwargs?", []),
        ("Is it OK if I run 5000 rows through it?", []),
        # Title case capitalises every word: capitals say nothing then.
        ("How Do I Configure Logging In Production?", []),
        # The asker's own things are theirs, not what the documents should name (a new set's
        # answerable questions, refused as "never mentions MacBook" and "VM", 2026-11-29).
        ("`flask run` on my MacBook says the port is taken", ["flask run"]),
        ("gunicorn starts fine on my VM but our Staging Box cannot reach it", []),
        # An acronym before a capitalised word is one product's name ("VS Code"), judged as a
        # name of several words; a number in the plural is a count of that number, not a name.
        ("VS Code breakpoints in my views never trigger", ["VS Code"]),
        ("Our VS Code setup fails; and what is TOTP Login here?", ["TOTP Login"]),
        ("Does it run on AWS. Lambda is what we use", ["AWS"]),
        ("the server log is full of 404s for /favicon.ico", []),
        ("Why did sales drop in the 1990s compared to 2004?", ["2004"]),
    ],
)
def test_named_terms_are_the_specific_things_a_question_names(question, names):
    assert named_terms(question) == names


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much does the Pro plan cost per month?", AMOUNT),
        ("What is the fee for a late filing?", AMOUNT),
        ("When was the treaty signed?", DATE),
        ("In what year did the war end?", DATE),
        ("How long does a refund take?", DURATION),
        ("How many days is the reset link valid?", DURATION),
        ("How much memory does it use?", None),
        ("How long can a username be?", None),
        ("How many players are on the field?", None),
    ],
)
def test_the_kind_of_value_a_question_asks_for(question, kind):
    assert asked_kind(question) == kind


def test_a_passage_holds_a_value_of_the_kind_asked_for_only_in_its_form():
    assert holds_kind(AMOUNT, "The Pro plan is $12 a month.") and holds_kind(AMOUNT, "It costs 40 euros.")
    assert holds_kind(AMOUNT, "the cost c([Search]) is set to 0.1")
    assert not holds_kind(AMOUNT, "The Pro plan adds 12 seats and priority support.")
    assert holds_kind(DATE, "It was signed on June 28, 1919.") and holds_kind(DATE, "due 2024-07-14")
    assert not holds_kind(DATE, "It was signed by 32 countries.")
    assert holds_kind(DURATION, "Refunds arrive within 5 business days.") and holds_kind(
        DURATION, "two weeks"
    )
    assert not holds_kind(DURATION, "Refunds go back to the card used.")


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Was passiert, wenn ich meinen Termin verpasse?", "de"),
        ("Que se passe-t-il si je manque mon audience ?", "fr"),
        ("¿Qué pasa si no voy a mi audiencia?", "es"),
        ("What happens if I miss my scheduled hearing?", None),
        ("Die Hard release date?", None),
        ("la vie en rose lyrics meaning", None),
    ],
)
def test_a_questions_language_from_its_grammar_words(question, language):
    assert foreign_language(question) == language


def test_each_explained_test_refuses_with_its_reason_and_is_switchable():
    cases = (
        (Evidence(**STRONG, missing_terms=("TOTP",)), REASON_MISSING_TERM, Checks(missing_terms=False)),
        (
            Evidence(**STRONG, asked_kind=AMOUNT, kind_found=False),
            REASON_ANSWER_TYPE,
            Checks(answer_type=False),
        ),
        (
            Evidence(**STRONG, language="de", english_only=True, absent=MAX_ABSENT),
            REASON_LANGUAGE,
            Checks(language=False),
        ),
    )
    for evidence, reason, off in cases:
        verdict = verdict_for(evidence, min_answerability=0.18, min_relevance=0.0)
        assert not verdict.answerable and verdict.reason == reason
        assert verdict_for(evidence, min_answerability=0.18, min_relevance=0.0, checks=off).answerable
        # minAnswerability 0 never refuses.
        assert verdict_for(evidence, min_answerability=0.0, min_relevance=0.0).answerable
    # Over documents in the question's own language (most of its words found), no language refusal.
    own = Evidence(**STRONG, language="de", english_only=True, absent=0.1)
    assert verdict_for(own, min_answerability=0.18, min_relevance=0.0).answerable
    multilingual = Evidence(**STRONG, language="de", english_only=False, absent=1.0)
    assert verdict_for(multilingual, min_answerability=0.18, min_relevance=0.0).reason != REASON_LANGUAGE


def test_a_closest_match_holding_the_question_overrules_only_refusals_on_evidence():
    weighed = verdict_for(
        Evidence(**STRONG, absent=0.5, absent_words=2, relative_similarity=0.7),
        min_answerability=0.18,
        min_relevance=0.0,
    )
    assert weighed.reason == REASON_ABSENT and overrulable(weighed)
    assert not overrulable(weighed, Checks(closest_match=False))
    answered = overruled(weighed)
    assert answered.answerable and answered.as_dict()["note"] == OVERRULED_NOTE
    explained = verdict_for(
        Evidence(**STRONG, missing_terms=("TOTP",)), min_answerability=0.18, min_relevance=0.0
    )
    assert not overrulable(explained)
    assert holds_question(used={"schedul", "hear"}, held={"schedul", "hear", "appear"}, similarity=0.4)
    assert not holds_question(used={"schedul", "hear"}, held={"hear"}, similarity=0.4)
    assert not holds_question(used={"schedul", "hear"}, held={"schedul", "hear"}, similarity=0.1)
    assert not holds_question(used=set(), held={"hear"}, similarity=0.4)
    # One word in common is the document's topic ("Bates" in his biography), not the question.
    assert not holds_question(used={"bate"}, held={"bate", "governor"}, similarity=0.4)
