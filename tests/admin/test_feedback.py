"""The admin's rated answers (question, answer, sources, rating, comment) and their export, and the
visible lock on global settings."""

from __future__ import annotations

import pytest

from knowledge.models import EvalSet, KnowledgeSetting
from tests.api.test_feedback import answered

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(admin_client):
    return admin_client


def test_rated_answers_are_listed_with_question_answer_sources_and_comment(operator, alice, bob):
    up = answered(alice, feedback_rating="up", feedback_comment="spot on")
    answered(bob, "What is flag day?", feedback_rating="down", feedback_comment="off topic")
    answered(alice, "Never rated")
    page = operator.get("/admin/knowledge/ratedanswer/").content.decode()
    assert up.question in page and "33,511 pairs" in page and "spot on" in page
    assert "[1] PaSa · page=3" in page and "heading=History" in page
    assert 'class="rating rating-down"' in page and "off topic" in page
    assert "Never rated" not in page
    only_down = operator.get("/admin/knowledge/ratedanswer/?feedback_rating__exact=down").content.decode()
    assert "off topic" in only_down and "spot on" not in only_down


def test_the_admin_action_stores_the_helpful_ones_as_an_evaluation_set(operator, alice, bob):
    up = answered(alice, feedback_rating="up")
    down = answered(bob, "What is flag day?", feedback_rating="down")
    response = operator.post(
        "/admin/knowledge/ratedanswer/",
        {"action": "export_as_question_set", "_selected_action": [up.pk, down.pk]},
        follow=True,
    )
    assert response.status_code == 200
    stored = EvalSet.objects.get(name__startswith="feedback ")
    assert [q.question for q in stored.questions.all()] == [up.question]
    assert "Stored 1 question(s)" in response.content.decode()


def test_locked_settings_carry_a_badge_and_can_be_filtered(operator):
    from knowledge.parameter_values import global_settings_ensure

    global_settings_ensure()
    KnowledgeSetting.objects.filter(key="rrfK").update(is_locked=True)
    page = operator.get("/admin/knowledge/knowledgesetting/").content.decode()
    assert page.count('class="lock-badge locked"') == 1
    locked = operator.get("/admin/knowledge/knowledgesetting/?is_locked__exact=1").content.decode()
    assert "Rank fusion smoothing" in locked and "Passages per answer" not in locked
