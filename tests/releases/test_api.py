"""Releases through the REST API: the owner reads and decides on them; nobody else sees them."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from knowledge.models import Chunk, Release
from knowledge.services.collections import collection_create
from tests.api.conftest import assert_error


def bearer(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='tests')[1]}")
    return client


def releases_url(collection, tail: str = "") -> str:
    return f"/api/v1/collections/{collection.pk}/releases/{tail}"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_owner_sees_the_held_release_and_promotes_rolls_back_and_discards_it(
    alice, handbook, hundred_characters
):
    client = bearer(alice)
    first = Release.objects.get(collection=handbook, state="serving")
    document = handbook.documents.order_by("pk").first()

    started = client.post(
        f"/api/v1/documents/{document.pk}/reindex/", {"chunk_profile": "fixed 100"}, format="json"
    )
    assert started.status_code == 202, started.content
    held = started.json()["release"]  # processing runs inline in tests: the gate has decided already
    assert held["state"] == "held" and held["chunk_profile"] == "fixed 100"
    assert held["gate"]["decision"] == "held" and held["gate"]["worse"] > 0
    assert held["gate"]["compared_with"] == first.pk and held["chunks"] > 0
    assert Release.objects.get(pk=held["id"]).created_by == alice  # who asked, as the audit log names
    assert client.get(f"/api/v1/collections/{handbook.pk}/").json()["release"]["id"] == held["id"]

    listed = client.get(releases_url(handbook)).json()["releases"]
    assert [(r["id"], r["state"]) for r in listed] == [(held["id"], "held"), (first.pk, "serving")]
    assert "report" not in listed[0]
    detail = client.get(releases_url(handbook, f"{held['id']}/")).json()
    assert detail["report"]["questions"] == len(detail["report"]["per_question"]) > 0
    assert detail["chunks"] == held["chunks"]

    refused = assert_error(client.post(releases_url(handbook, f"{first.pk}/promote/")), 400)
    assert refused["message"] == f"release {first.pk} is serving; only a candidate or held one is promoted"

    promoted = client.post(releases_url(handbook, f"{held['id']}/promote/"))
    assert promoted.status_code == 200 and promoted.json()["state"] == "serving"
    assert client.get(f"/api/v1/collections/{handbook.pk}/").json()["release"] is None
    handbook.refresh_from_db()
    assert handbook.chunk_profile_id == hundred_characters.pk

    rolled_back = client.post(releases_url(handbook, "rollback/"))
    assert rolled_back.json() == {"serving": first.pk, "retired": held["id"], "documents_queued": 0}
    discarded = client.post(releases_url(handbook, f"{held['id']}/discard/"))
    assert discarded.json() == {"discarded": held["id"], "chunks_deleted": held["chunks"]}
    assert not Chunk.objects.filter(collection=handbook, chunk_profile=hundred_characters).exists()
    nothing_kept = assert_error(client.post(releases_url(handbook, "rollback/")), 400)
    assert nothing_kept["message"] == "handbook keeps no earlier release to roll back to"


@pytest.mark.django_db
def test_outsiders_are_told_nothing_exists_and_readers_may_not_manage(alice, bob, charlie):
    private = collection_create(name="private notes", owner=alice)
    public = collection_create(name="public notes", owner=alice, visibility="public")
    release = Release.objects.get(collection=private)
    other = Release.objects.get(collection=public)
    bobs = collection_create(name="bob's", owner=bob)
    outsider = bearer(bob)
    for method, url in [
        ("get", releases_url(private)),
        ("get", releases_url(private, f"{release.pk}/")),
        ("post", releases_url(private, f"{release.pk}/promote/")),
        ("post", releases_url(private, f"{release.pk}/discard/")),
        ("post", releases_url(private, "rollback/")),
    ]:
        assert assert_error(getattr(outsider, method)(url), 404)["message"] == "no such collection"
    # His own collection with another collection's release id: not found either.
    assert assert_error(outsider.get(releases_url(bobs, f"{release.pk}/")), 404)["message"] == (
        f"bob's has no release {release.pk}"
    )
    owner = bearer(alice)
    assert_error(owner.post(releases_url(private, f"{other.pk}/discard/")), 404)
    assert Release.objects.get(pk=other.pk).state == "serving"
    # Charlie reads the public collection, and is refused its releases; its detail shows him none.
    reader = bearer(charlie)
    assert_error(reader.get(releases_url(public)), 403)
    assert_error(reader.post(releases_url(public, f"{other.pk}/promote/")), 403)
    assert reader.get(f"/api/v1/collections/{public.pk}/").json()["release"] is None
