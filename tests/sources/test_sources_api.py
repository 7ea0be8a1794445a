"""The sources API: who may see, add, sync and remove a source; what is refused, with its reason."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from knowledge.models import Source
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_an_owner_adds_a_web_source_and_reads_it_with_its_syncs(alice, django_capture_on_commit_callbacks):
    collection = collection_create(name="docs", owner=alice)
    api = client_for(alice)
    with django_capture_on_commit_callbacks() as queued:  # the first sync is queued for a worker
        response = api.post(
            f"/api/v1/collections/{collection.pk}/sources/",
            {"location": "https://docs.example.org/guide/", "max_pages": 50, "interval_hours": 6},
            format="json",
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["kind"], body["options"], body["interval_hours"]) == ("web", {"max_pages": 50}, 6)
    assert len(queued) == 1
    listed = api.get(f"/api/v1/collections/{collection.pk}/sources/").json()
    assert [s["id"] for s in listed["results"]] == [body["id"]]
    detail = api.get(f"/api/v1/sources/{body['id']}/").json()
    assert detail["syncs"] == [] and detail["last_sync"] is None


def test_another_users_source_is_invisible_and_untouchable(alice, bob):
    collection = collection_create(name="private", owner=alice)
    source = source_add(
        collection=collection, spec=SourceSpec(location="https://docs.example.org/"), user=alice
    )
    api = client_for(bob)
    for response in (
        api.get(f"/api/v1/sources/{source.pk}/"),
        api.post(f"/api/v1/sources/{source.pk}/sync/"),
        api.delete(f"/api/v1/sources/{source.pk}/"),
        api.get(f"/api/v1/collections/{collection.pk}/sources/"),
        api.post(
            f"/api/v1/collections/{collection.pk}/sources/", {"location": "https://x.org/"}, format="json"
        ),
    ):
        assert response.status_code == 404, response.json()
    assert Source.objects.filter(pk=source.pk).exists()


@pytest.mark.security
@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"location": "ftp://files.example.org/"}, "not an http or https URL"),
        ({"location": "https://me:pw@docs.example.org/"}, "may not hold a user name or password"),
        ({"location": "http://127.0.0.1:8000/"}, "the address 127.0.0.1 is a loopback address"),
        ({"location": "http://169.254.169.254/latest/"}, "the cloud metadata address"),
        ({"location": "file:///etc/passwd", "kind": "git"}, "only operators may follow a local repository"),
        ({"location": "ext::sh", "kind": "git"}, "only operators"),
        ({"location": "https://127.0.0.1/internal.git", "kind": "git"}, "loopback address"),
        ({"location": "https://169.254.169.254/x.git", "kind": "git"}, "cloud metadata address"),
        ({"location": "https://localhost/x.git", "kind": "git"}, "KNOWLEDGE_SOURCES_ALLOWED_NETWORKS"),
        ({"location": "https://bob:secret@github.com/org/x.git", "kind": "git"}, "user name or password"),
        ({"location": "/etc", "kind": "folder"}, "only operators"),
    ],
)
def test_a_source_that_would_reach_the_server_itself_is_refused_with_a_reason(alice, payload, message):
    collection = collection_create(name="refusals", owner=alice)
    response = client_for(alice).post(f"/api/v1/collections/{collection.pk}/sources/", payload, format="json")
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]
    assert not Source.objects.exists()


def test_sync_now_is_queued_and_a_second_sync_while_one_runs_is_refused(
    alice, django_capture_on_commit_callbacks
):
    collection = collection_create(name="docs", owner=alice)
    source = source_add(
        collection=collection, spec=SourceSpec(location="https://docs.example.org/"), user=alice
    )
    api = client_for(alice)
    with django_capture_on_commit_callbacks() as queued:
        assert api.post(f"/api/v1/sources/{source.pk}/sync/").status_code == 202
    assert len(queued) == 1
    source.syncs.create(trigger="schedule")  # a sync running now
    response = api.post(f"/api/v1/sources/{source.pk}/sync/")
    assert response.status_code == 400
    assert "being synced already" in response.json()["error"]["message"]


def test_mcp_list_collections_names_each_readable_collections_sources(alice, bob):
    from knowledge.mcp.tools import list_collections

    mine = collection_create(name="mine", owner=alice)
    source = source_add(collection=mine, spec=SourceSpec(location="https://docs.example.org/"), user=alice)
    source.syncs.create(trigger="test", status="succeeded", added=3)
    public = collection_create(name="bob public", owner=bob, visibility="public")
    source_add(collection=public, spec=SourceSpec(location="https://bob.example.org/"), user=bob)
    secret = collection_create(name="bob secret", owner=bob)
    source_add(collection=secret, spec=SourceSpec(location="https://secret.example.org/"), user=bob)

    rows = {
        row["name"]: row for row in list_collections(user=alice, base_url="http://testserver")["collections"]
    }
    [followed] = rows["mine"]["sources"]
    assert (followed["id"], followed["kind"], followed["location"]) == (
        source.pk,
        "web",
        "https://docs.example.org/",
    )
    assert followed["last_sync"]["status"] == "succeeded" and followed["last_sync"]["added"] == 3
    # A collection alice may read shows what it follows; one she may not read is not listed at all.
    assert [s["location"] for s in rows["bob public"]["sources"]] == ["https://bob.example.org/"]
    assert "bob secret" not in rows
