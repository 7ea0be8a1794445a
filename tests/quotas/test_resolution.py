"""Which limit applies: the user's own override, else the most generous group, else the default."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import IntegrityError

from config.base.env import env_size_or_none
from knowledge.models import Quota
from knowledge.quotas import LIMITS, quota_limits_for
from tests.quotas.conftest import limit

pytestmark = pytest.mark.django_db


@pytest.fixture
def defaults(settings):
    settings.KNOWLEDGE_QUOTA_DOCUMENTS = 10
    settings.KNOWLEDGE_QUOTA_BYTES = 1000
    settings.KNOWLEDGE_QUOTA_CHUNKS = None
    settings.KNOWLEDGE_QUOTA_QUESTIONS_PER_DAY = 5
    settings.KNOWLEDGE_QUOTA_LLM_TOKENS_PER_MONTH = None


def member(user, *names: str) -> list[Group]:
    groups = [Group.objects.get_or_create(name=name)[0] for name in names]
    user.groups.add(*groups)
    return groups


def test_without_overrides_the_defaults_apply_and_unset_means_no_limit(alice, defaults):
    assert quota_limits_for(user_id=alice.pk) == {
        "documents": 10,
        "bytes": 1000,
        "chunks": None,
        "questions_per_day": 5,
        "llm_tokens_per_month": None,
    }


def test_the_users_own_override_beats_every_group(alice, defaults):
    (team,) = member(alice, "team")
    limit(group=team, documents=500, questions_per_day=50)
    limit(alice, documents=3)
    limits = quota_limits_for(user_id=alice.pk)
    assert limits["documents"] == 3  # her own, though the group's is higher
    assert limits["questions_per_day"] == 50  # blank in her own: the group's


def test_the_most_generous_group_that_sets_a_limit_wins(alice, bob, defaults):
    small, big, silent = member(alice, "small", "big", "silent")
    limit(group=small, documents=20, bytes=5000)
    limit(group=big, documents=200)
    limit(group=silent)  # sets nothing: inherits
    limits = quota_limits_for(user_id=alice.pk)
    assert (limits["documents"], limits["bytes"]) == (200, 5000)
    assert limits["questions_per_day"] == 5  # no group sets it: the default
    assert quota_limits_for(user_id=bob.pk)["documents"] == 10  # not a member: the default


def test_blank_fields_inherit_and_unlimited_lifts_only_the_blank_ones(alice, defaults):
    (team,) = member(alice, "team")
    limit(group=team, unlimited=True, bytes=2000)
    limits = quota_limits_for(user_id=alice.pk)
    assert limits["documents"] is None and limits["questions_per_day"] is None
    assert limits["bytes"] == 2000
    Quota.objects.create(user=alice, documents=7)
    assert quota_limits_for(user_id=alice.pk)["documents"] == 7


def test_staff_are_not_exempt_unless_an_override_says_so(make_user, defaults):
    admin = make_user("root", is_staff=True, is_superuser=True)
    assert quota_limits_for(user_id=admin.pk)["documents"] == 10
    limit(admin, unlimited=True)
    assert quota_limits_for(user_id=admin.pk) == dict.fromkeys(LIMITS)


def test_a_quota_is_for_exactly_one_user_or_one_group(alice):
    (team,) = member(alice, "team")
    with pytest.raises(ValidationError, match="exactly one"):
        Quota(user=alice, group=team).full_clean()
    with pytest.raises(IntegrityError):
        Quota.objects.create()


def test_one_quota_per_user(alice):
    limit(alice, documents=1)
    with pytest.raises(IntegrityError):
        limit(alice, documents=2)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1048576", 1048576), ("500MB", 500 * 1024**2), ("2 GB", 2 * 1024**3), ("10kb", 10240), ("", None)],
)
def test_the_bytes_setting_takes_bytes_or_a_size(monkeypatch, raw, expected):
    monkeypatch.setenv("KNOWLEDGE_QUOTA_BYTES", raw)
    assert env_size_or_none("KNOWLEDGE_QUOTA_BYTES") == expected


@pytest.mark.parametrize("raw", ["lots", "5 XB", "-1", "1.5GB"])
def test_a_bad_size_stops_the_process(monkeypatch, raw):
    monkeypatch.setenv("KNOWLEDGE_QUOTA_BYTES", raw)
    with pytest.raises(ImproperlyConfigured, match="KNOWLEDGE_QUOTA_BYTES"):
        env_size_or_none("KNOWLEDGE_QUOTA_BYTES")
