"""The answerability verdict: pure functions over the evidence the searches produce."""

from __future__ import annotations

import pytest

from knowledge.retrieval.answerability import (
    MAX_ABSENT,
    MIN_RELATIVE,
    SIMILARITY_FLOOR,
    WEAKER,
    Evidence,
    answerability_score,
    coverage_of,
    margin_of,
    verdict_for,
)


def test_margin_is_the_best_similarity_above_the_mean_of_the_next_nine():
    assert margin_of([0.8, 0.5, 0.5, 0.2]) == pytest.approx(0.8 - 0.4)
    assert margin_of([0.3] + [0.6] * 12) == pytest.approx(0.0)  # order of the input does not matter
    assert margin_of([0.7]) == 0.0 and margin_of([]) == 0.0


def test_coverage_weighs_rare_terms_most():
    weights = {"captcha": 8.0, "form": 1.0, "django": 1.0}
    assert coverage_of(weights, {"form", "django"}) == pytest.approx(0.2)
    assert coverage_of(weights, {"captcha"}) == pytest.approx(0.8)
    assert coverage_of({}, {"form"}) == 0.0


def test_strong_evidence_answers_and_weak_evidence_refuses():
    strong = Evidence(best_similarity=0.75, margin=0.3, coverage=0.9, agreement=1.0)
    weak = Evidence(best_similarity=0.35, margin=0.02, coverage=0.0, agreement=0.0)
    assert answerability_score(strong) > answerability_score(weak)
    assert verdict_for(strong, min_answerability=0.2, min_relevance=0.0).answerable
    refused = verdict_for(weak, min_answerability=0.2, min_relevance=0.0)
    assert not refused.answerable and refused.reason == "the evidence is below minAnswerability"
    # 0 never refuses on the score; minRelevanceScore is still honoured first.
    assert verdict_for(weak, min_answerability=0.0, min_relevance=0.0).answerable
    cut = verdict_for(strong, min_answerability=0.0, min_relevance=0.8)
    assert not cut.answerable and cut.reason == "no chunk reaches minRelevanceScore"


def test_the_verdict_reports_its_evidence():
    evidence = Evidence(best_similarity=0.61234, margin=0.1, coverage=0.5, agreement=1.0)
    reported = verdict_for(evidence, min_answerability=0.2, min_relevance=0.0).as_dict()
    assert reported["evidence"] == {
        "best_similarity": 0.6123,
        "margin": 0.1,
        "coverage": 0.5,
        "agreement": 1.0,
        "absent": 0.0,
        "absent_words": 0,
        "relative_similarity": None,
        "missing_terms": [],
        "asked_kind": None,
        "kind_found": True,
        "language": None,
        "english_only": False,
    }
    assert reported["threshold"] == 0.2 and 0.0 < reported["score"] < 1.0


def test_a_best_chunk_unlike_the_question_is_refused_whatever_else_agrees():
    unlike = Evidence(best_similarity=0.2, margin=0.3, coverage=1.0, agreement=1.0)
    refused = verdict_for(unlike, min_answerability=0.2, min_relevance=0.0)
    assert not refused.answerable and refused.reason == "the best chunk is unlike the question"
    assert verdict_for(unlike, min_answerability=0.0, min_relevance=0.0).answerable


def test_a_cross_lingual_match_under_the_old_floor_is_judged_on_its_evidence():
    # English questions about a spreadsheet's Japanese cells: the right sheet scores 0.25-0.28.
    cross_lingual = Evidence(best_similarity=0.27, margin=0.03, coverage=0.16, agreement=0.0)
    assert SIMILARITY_FLOOR < 0.27 < 0.30
    assert verdict_for(cross_lingual, min_answerability=0.18, min_relevance=0.0).answerable
    assert not verdict_for(cross_lingual, min_answerability=0.3, min_relevance=0.0).answerable


def test_the_similarity_floor_judges_only_questions_the_embedding_model_reads():
    from django.conf import settings

    from knowledge.retrieval.answerability import embedding_reads

    model = settings.KNOWLEDGE_EMBEDDING_MODEL
    assert embedding_reads("How much does a laptop cost?", embedding_model=model)
    assert embedding_reads("What does ノートパソコン cost in the 2024 sheet?", embedding_model=model)
    assert not embedding_reads("ノートパソコンの単価はいくらですか？", embedding_model=model)
    assert not embedding_reads("USBメモリ", embedding_model=model)
    assert embedding_reads("ノートパソコンの単価は？", embedding_model="intfloat/multilingual-e5-small")
    lexical_only = Evidence(best_similarity=0.18, margin=0.01, coverage=1.0, agreement=1.0)
    assert not verdict_for(lexical_only, min_answerability=0.18, min_relevance=0.0).answerable
    assert verdict_for(
        lexical_only, min_answerability=0.18, min_relevance=0.0, similarity_floor=False
    ).answerable
    nothing = Evidence(best_similarity=0.18, margin=0.01, coverage=0.0, agreement=0.0)
    assert not verdict_for(
        nothing, min_answerability=0.18, min_relevance=0.0, similarity_floor=False
    ).answerable


def test_a_question_whose_words_the_documents_lack_is_refused_when_its_best_passage_is_weak():
    close = dict(best_similarity=0.45, margin=0.3, coverage=0.9, agreement=1.0)
    weak = WEAKER - 0.1
    lacking = verdict_for(
        Evidence(**close, absent=MAX_ABSENT, absent_words=2, relative_similarity=weak),
        min_answerability=0.18,
        min_relevance=0.0,
    )
    assert not lacking.answerable and lacking.reason == "most of the question's words occur nowhere"
    for absent, relative in ((MAX_ABSENT - 0.1, weak), (1.0, WEAKER + 0.1), (1.0, None)):
        evidence = Evidence(**close, absent=absent, absent_words=2, relative_similarity=relative)
        assert verdict_for(evidence, min_answerability=0.18, min_relevance=0.0).answerable
    evidence = Evidence(**close, absent=1.0, absent_words=2, relative_similarity=weak)
    assert verdict_for(evidence, min_answerability=0.0, min_relevance=0.0).answerable
    # One word found nowhere is the asker's wording: "What processor does it use?" is half absent by it.
    own_word = Evidence(**close, absent=0.5, absent_words=1, relative_similarity=weak)
    assert verdict_for(own_word, min_answerability=0.18, min_relevance=0.0).answerable


def test_a_best_passage_far_weaker_than_a_typical_answer_is_refused():
    close = dict(best_similarity=0.3, margin=0.3, coverage=0.9, agreement=1.0)
    weak = verdict_for(
        Evidence(**close, relative_similarity=MIN_RELATIVE - 0.01), min_answerability=0.18, min_relevance=0.0
    )
    assert not weak.answerable and weak.reason == "far weaker than a typical answer here"
    typical = Evidence(**close, relative_similarity=MIN_RELATIVE + 0.2)
    assert verdict_for(typical, min_answerability=0.18, min_relevance=0.0).answerable
    # No yardstick (too few sentences in the collections): the rule does not apply.
    assert verdict_for(
        Evidence(**close, relative_similarity=None), min_answerability=0.18, min_relevance=0.0
    ).answerable
