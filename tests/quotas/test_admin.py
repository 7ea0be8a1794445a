"""Operators set quotas in the admin: one user or one group, blank fields inherit."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from knowledge.models import Quota, UsageDay

pytestmark = pytest.mark.django_db

BLANK = {
    "documents": "",
    "bytes": "",
    "chunks": "",
    "questions_per_day": "",
    "llm_tokens_per_month": "",
}


def test_an_operator_sets_a_users_quota_and_sees_what_is_in_effect(admin_client, alice, settings):
    settings.KNOWLEDGE_QUOTA_QUESTIONS_PER_DAY = 20
    response = admin_client.post(
        "/admin/knowledge/quota/add/", {"user": alice.pk, "group": "", **BLANK, "documents": "5"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    quota = Quota.objects.get(user=alice)
    assert (quota.documents, quota.bytes) == (5, None)
    page = admin_client.get(f"/admin/knowledge/quota/{quota.pk}/change/").content.decode()
    assert "blank = inherit" in page.lower()
    assert (
        "documents: 0 / 5" in page and "questions_per_day: 0 / 20" in page and "bytes: 0 / no limit" in page
    )


def test_a_quota_for_both_a_user_and_a_group_is_refused_on_the_form(admin_client, alice):
    team = Group.objects.create(name="team")
    response = admin_client.post("/admin/knowledge/quota/add/", {"user": alice.pk, "group": team.pk, **BLANK})
    assert response.status_code == 200
    assert "A quota is for one user or one group: choose exactly one." in response.content.decode()
    assert not Quota.objects.exists()


def test_the_usage_ledger_is_read_only(admin_client, alice):
    UsageDay.objects.create(user=alice, day="2026-01-02", questions=3, llm_tokens=40)
    assert admin_client.get("/admin/knowledge/usageday/").status_code == 200
    assert admin_client.get("/admin/knowledge/usageday/add/").status_code == 403
