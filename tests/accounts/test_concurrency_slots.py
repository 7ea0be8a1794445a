"""Slots of work a user may run only a few of at once: counted in the database, so every server process
sees the same count; given back however the work ends; left behind by a dead process, free once expired."""

from __future__ import annotations

import datetime
import threading
import uuid

import pytest
from django.db import connections
from django.utils import timezone

from accounts.concurrency import (
    EXPIRY_MARGIN,
    concurrency_slot,
    concurrency_slot_take,
    concurrency_slots_prune,
)
from accounts.models import ConcurrencySlot
from config.base.errors import RateLimitedError

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]


def take(key: str = "preview_1", limit: int = 2, seconds: float = 30) -> int | None:
    return concurrency_slot_take(key=key, limit=limit, seconds=seconds, holder=uuid.uuid4())


def test_past_the_limit_the_work_is_refused_with_when_to_come_back():
    with concurrency_slot(key="preview_1", limit=2, seconds=20, what="previews"):
        with concurrency_slot(key="preview_1", limit=2, seconds=20, what="previews"):
            with pytest.raises(RateLimitedError) as refused:
                with concurrency_slot(key="preview_1", limit=2, seconds=20, what="previews"):
                    pass
            with concurrency_slot(key="preview_2", limit=2, seconds=20, what="previews"):
                pass  # another user's slots are their own
    assert "at most 2 previews at once" in str(refused.value)
    assert 1 <= refused.value.retry_after <= 20  # when the oldest one's work must have ended
    assert not ConcurrencySlot.objects.exists()  # all given back


def test_a_slot_is_given_back_when_the_work_fails():
    with pytest.raises(ValueError):
        with concurrency_slot(key="preview_1", limit=1, seconds=20, what="previews"):
            raise ValueError("the work failed")
    with concurrency_slot(key="preview_1", limit=1, seconds=20, what="previews"):
        pass


def test_a_slot_left_by_a_dead_process_is_free_once_it_expires():
    assert take(limit=1) == 0  # its process dies: nobody gives it back
    assert take(limit=1) is None
    ConcurrencySlot.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    assert take(limit=1) == 0
    ConcurrencySlot.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    assert concurrency_slots_prune() == 1


def test_a_slot_expires_a_margin_after_the_longest_its_work_may_take():
    with concurrency_slot(key="preview_1", limit=1, seconds=20, what="previews"):
        left = (ConcurrencySlot.objects.get().expires_at - timezone.now()).total_seconds()
    assert 20 + EXPIRY_MARGIN - 5 < left <= 20 + EXPIRY_MARGIN


def test_the_first_holder_does_not_give_back_a_slot_taken_over_after_it_expired():
    first = uuid.uuid4()
    concurrency_slot_take(key="preview_1", limit=1, seconds=30, holder=first)
    ConcurrencySlot.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    with concurrency_slot(key="preview_1", limit=1, seconds=20, what="previews"):
        ConcurrencySlot.objects.filter(holder=first).delete()  # what the late first holder's exit does
        assert ConcurrencySlot.objects.count() == 1
        assert take(limit=1) is None


def test_takers_racing_from_many_connections_never_pass_the_limit():
    """Each thread has a connection of its own, as each server process does."""
    start, taken = threading.Barrier(8), []

    def racer():
        try:
            start.wait()
            taken.append(take(limit=3))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(n for n in taken if n is not None) == [0, 1, 2]
    assert taken.count(None) == 5
