"""How often a source may sync by itself: a cron expression is held to the hour interval_hours starts
at, on every path; and the syncs a schedule starts count against the collection owner's sync rate,
with "Sync now", so no path makes the worker sync more often than the rate."""

from __future__ import annotations

import copy
import datetime

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from config.base.errors import KnowledgeError
from knowledge.models import Source, SourceSync
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_schedule_save
from knowledge.tasks import sync_source

pytestmark = [pytest.mark.django_db, pytest.mark.security]

TOO_OFTEN = [
    "* * * * *",
    "*/30 * * * *",
    "0,45 9 * * 1-5",  # twice within one hour, once a day
    "0 * * * * 0,30",  # croniter's sixth field: seconds
]
HOURLY_OR_LESS = ["0 * * * *", "@hourly", "15 9-17 * * 1-5", "0 6 * * 1", "30 2 1 * *"]


@pytest.mark.parametrize("cron", TOO_OFTEN)
def test_a_cron_expression_that_fires_more_often_than_hourly_is_refused(alice, cron):
    collection = collection_create(name="often", owner=alice)
    with pytest.raises(KnowledgeError, match="at most once an hour"):
        source_add(
            collection=collection,
            spec=SourceSpec(location="https://docs.example.org/", cron=cron),
            user=alice,
        )
    assert not Source.objects.exists()


@pytest.mark.parametrize("cron", HOURLY_OR_LESS)
def test_a_cron_expression_at_most_hourly_is_taken_and_first_runs_at_its_next_time(alice, cron):
    from croniter import croniter
    from django.utils import timezone
    from django_q.models import Schedule

    collection = collection_create(name="hourly", owner=alice)
    before = timezone.localtime()
    source = source_add(
        collection=collection, spec=SourceSpec(location="https://docs.example.org/", cron=cron), user=alice
    )
    next_time = croniter(cron, before).get_next(type(before))
    # Not at once: the first sync of a new source is queued by whoever added it, and an edit (the
    # admin saves the schedule again) must not sync at once either, or edits would beat the gap.
    assert Schedule.objects.get(name=f"knowledge-source-{source.pk}").next_run >= next_time
    source_schedule_save(source)
    assert Schedule.objects.get(name=f"knowledge-source-{source.pk}").next_run >= next_time


def test_every_path_refuses_a_cron_expression_that_fires_too_often(alice, make_user, tmp_path, settings):
    collection = collection_create(name="paths", owner=alice)
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post(
        f"/api/v1/collections/{collection.pk}/sources/",
        {"location": "https://docs.example.org/", "cron": "*/5 * * * *"},
        format="json",
    )
    assert response.status_code == 400
    assert "at most once an hour" in response.json()["error"]["message"]

    admin = Client()
    admin.force_login(make_user("operator", is_staff=True, is_superuser=True))
    form = {"collection": collection.pk, "kind": "web", "location": "https://docs.example.org/",
            "options": "{}", "grace_hours": 24, "cron": "*/5 * * * *"}  # fmt: skip
    refused = admin.post("/admin/knowledge/source/add/", form)
    assert refused.status_code == 200 and "at most once an hour" in refused.content.decode()

    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    with pytest.raises(CommandError, match="at most once an hour"):
        call_command("knowledge_sync", "--collection", "paths", "--owner", alice.username,
                     "--source", str(tmp_path), "--cron", "*/5 * * * *")  # fmt: skip
    assert not Source.objects.exists()


@pytest.fixture
def two_syncs_an_hour(settings):
    rest = copy.deepcopy(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"]["syncs"] = "2/hour"
    settings.REST_FRAMEWORK = rest


def test_scheduled_syncs_count_against_the_owners_sync_rate_and_one_over_it_is_recorded(
    alice, tmp_path, settings, two_syncs_an_hour
):
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    collection = collection_create(name="scheduled", owner=alice)
    source = source_add(
        collection=collection,
        spec=SourceSpec(location=str(tmp_path), kind="folder", interval_hours=1),
        user=alice,
        operator=True,
    )
    for _ in range(2):
        run = SourceSync.objects.get(pk=sync_source(source.pk, "schedule"))
        assert run.status == "succeeded", run.error

    # "Sync now" counts against the same rate: refused, with the reason.
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post(f"/api/v1/sources/{source.pk}/sync/")
    assert response.status_code == 429, response.json()
    assert "source syncs" in response.json()["error"]["message"]

    # Over the rate, the schedule's sync is skipped, and the skip is recorded with its reason.
    skipped = SourceSync.objects.get(pk=sync_source(source.pk, "schedule"))
    assert (skipped.status, skipped.trigger) == ("failed", "schedule")
    assert skipped.error.startswith("skipped:") and "API_THROTTLE_SYNCS" in skipped.error, skipped.error
    assert SourceSync.objects.filter(source=source).count() == 3


def test_an_hourly_cron_is_hourly_across_a_change_of_summer_time():
    """The gaps are measured between instants: on the night clocks go back, 02:00 and "02:00 again"
    are an hour apart, though their wall clocks are equal."""
    from zoneinfo import ZoneInfo

    from knowledge.services.sources import _shortest_gap

    berlin = ZoneInfo("Europe/Berlin")
    night_clocks_go_back = datetime.datetime(2025, 10, 25, 23, 30, tzinfo=berlin)
    assert _shortest_gap("0 * * * *", night_clocks_go_back) == datetime.timedelta(hours=1)
