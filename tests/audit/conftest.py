"""Audit log fixtures: the API's clients and throttles, and a helper that finds exactly one event."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from tests.api.conftest import anon, bearer, generous_throttles  # noqa: F401 (fixtures)


def only_event(action: str, **filters) -> AuditEvent:
    """The one event of ``action`` (and ``filters``); fails on none or more than one."""
    events = list(AuditEvent.objects.filter(action=action, **filters))
    assert len(events) == 1, f"{len(events)} {action} events: {[str(e) for e in events]}"
    return events[0]


@pytest.fixture
def operator(make_user):
    return make_user("operator", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_as(client, operator):
    client.force_login(operator)
    return client
