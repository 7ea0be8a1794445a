"""Sources in the admin: the list, a refused location on the form, and "Sync now"."""

from __future__ import annotations

import pytest
from django.test import Client

from knowledge.models import Source
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(make_user):
    operator = make_user("operator", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(operator)
    return client


def test_the_admin_lists_sources_refuses_a_bad_location_and_queues_a_sync(
    operator_client, alice, django_capture_on_commit_callbacks
):
    collection = collection_create(name="docs", owner=alice)
    source = source_add(
        collection=collection,
        spec=SourceSpec(location="https://docs.example.org/", interval_hours=6),
        user=alice,
    )
    listing = operator_client.get("/admin/knowledge/source/").content.decode()
    assert "https://docs.example.org/" in listing and "every 6 h" in listing and "never" in listing

    refused = operator_client.post(
        "/admin/knowledge/source/add/",
        {
            "collection": collection.pk,
            "kind": "folder",
            "location": "/etc",
            "options": "{}",
            "grace_hours": 24,
        },
    )
    assert refused.status_code == 200  # the form again, with the reason
    assert "KNOWLEDGE_SOURCES_FOLDER_ROOTS" in refused.content.decode()
    assert Source.objects.count() == 1

    with django_capture_on_commit_callbacks() as queued:
        operator_client.post(
            "/admin/knowledge/source/", {"action": "sync_now", "_selected_action": [source.pk]}, follow=True
        )
    assert len(queued) == 1
