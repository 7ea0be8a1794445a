"""The API's rate limits: a sliding window over two periods, counted in one statement per request."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import RateCounter
from accounts.rate_limits import rate_count

pytestmark = pytest.mark.django_db

PERIOD = 60
START = 1_800_000_000 - 1_800_000_000 % PERIOD  # the start of a period


def test_the_limit_holds_within_a_period_and_refusals_are_not_counted():
    allowed = [rate_count(key="k", limit=3, period=PERIOD, now=START + n)[0] for n in range(5)]
    assert allowed == [True, True, True, False, False]
    assert RateCounter.objects.get(key="k").current == 3  # the refused two were not counted
    refused, wait = rate_count(key="k", limit=3, period=PERIOD, now=START + 10)
    assert not refused and 50 <= wait <= 120


def test_the_previous_period_weighs_by_how_much_of_it_is_still_within_one_period():
    for n in range(3):
        assert rate_count(key="k", limit=3, period=PERIOD, now=START + 50 + n)[0]
    # Just after the period ends its three requests still count almost fully: refused.
    assert not rate_count(key="k", limit=3, period=PERIOD, now=START + PERIOD + 1)[0]
    # Two thirds into the next period they weigh 1: two more are let in, the third is not.
    later = START + PERIOD + 40
    assert [rate_count(key="k", limit=3, period=PERIOD, now=later + n / 10)[0] for n in range(3)] == [
        True,
        True,
        False,
    ]
    # A period with no requests at all forgets everything before it.
    assert rate_count(key="k", limit=3, period=PERIOD, now=START + 3 * PERIOD + 1)[0]
    assert RateCounter.objects.get(key="k").previous == 0


def test_keys_are_counted_apart_in_one_statement_each():
    with CaptureQueriesContext(connection) as queries:
        assert rate_count(key="a", limit=1, period=PERIOD, now=START)[0]
        assert rate_count(key="b", limit=1, period=PERIOD, now=START)[0]
        assert not rate_count(key="a", limit=1, period=PERIOD, now=START + 1)[0]
    assert len(queries.captured_queries) == 3


def test_counts_of_clients_silent_for_a_day_are_pruned():
    import datetime

    from django.utils import timezone

    from accounts.rate_limits import rate_counters_prune

    # Counters are not rolled back with a test's transaction when another connection wrote them (an
    # earlier test's live server): start from none.
    RateCounter.objects.all().delete()
    rate_count(key="old", limit=3, period=PERIOD)
    rate_count(key="new", limit=3, period=PERIOD)
    RateCounter.objects.filter(key="old").update(touched_at=timezone.now() - datetime.timedelta(days=2))
    assert rate_counters_prune() == 1
    assert list(RateCounter.objects.values_list("key", flat=True)) == ["new"]


def test_counting_a_request_writes_no_write_ahead_log():
    """The counters are an UNLOGGED table: a request's count is never waited on by a disk flush.

    A commit to a logged table waits for its WAL to reach the disk (4 ms p50 and 12 ms p95
    measured here per request); losing the counts in a crash only resets the limits.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT relpersistence FROM pg_class WHERE oid = 'accounts_ratecounter'::regclass")
        assert cursor.fetchone()[0] == "u"
