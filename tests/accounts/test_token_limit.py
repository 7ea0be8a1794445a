"""The cap on a user's active API tokens holds when many creations arrive at once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from accounts.api_tokens import MAX_ACTIVE_TOKENS, token_create
from accounts.models import ApiToken
from config.base.errors import KnowledgeError

pytestmark = [pytest.mark.security]

THREADS = 12


def _create_all_at_once(user, count: int) -> list[object]:
    """``count`` threads, each on its own connection, creating a token once all are ready."""
    barrier = threading.Barrier(count)
    outcomes: list[object] = []

    def create(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            token_create(user=user, name=f"parallel {n}")
            outcomes.append("created")
        except KnowledgeError as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()  # the thread's own connection, not the test's

    threads = [threading.Thread(target=create, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_parallel_creations_never_pass_the_cap(alice):
    for n in range(MAX_ACTIVE_TOKENS - 3):
        token_create(user=alice, name=f"existing {n}")
    outcomes = _create_all_at_once(alice, THREADS)
    assert ApiToken.objects.filter(user=alice, revoked_at__isnull=True).count() == MAX_ACTIVE_TOKENS
    assert outcomes.count("created") == 3
    refusals = [outcome for outcome in outcomes if outcome != "created"]
    refused = f"you already have {MAX_ACTIVE_TOKENS} active tokens; revoke one first"
    assert refusals == [refused] * (THREADS - 3)
