"""Marketplace API: listings, subscriptions that grant and end access to a listed private collection."""

from __future__ import annotations

import pytest

from knowledge.models import Document, Subscription
from knowledge.services.collections import collection_create, collection_update
from knowledge.services.documents import DocumentUpload, document_upload
from tests.api.conftest import assert_error

MARKET = "/api/v1/marketplace/"
RETRIEVE = "/api/v1/retrieve/"
QUESTION = "What is a gravity hill and why do cars seem to roll uphill?"


def subscribe_url(collection_id: int) -> str:
    return f"/api/v1/collections/{collection_id}/subscribe/"


def ingest(collection, path) -> Document:
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    document = Document.objects.get(pk=result.document.pk)
    assert document.status == Document.Status.READY, document.error
    return document


@pytest.fixture
def hills(alice, corpus):
    """Alice's PRIVATE collection, listed, with a real ingested document."""
    collection = collection_create(
        name="Odd places",
        owner=alice,
        description="Optical illusions in the landscape",
        tags=["geology", "illusions"],
    )
    ingest(collection, corpus / "text" / "gravity_hill.md")
    return collection_update(collection=collection, listed=True)


def can_read(client, collection) -> bool:
    """Documents list and retrieval agree: both readable (with chunks) or both 404."""
    documents = client.get(f"/api/v1/collections/{collection.pk}/documents/")
    retrieved = client.post(RETRIEVE, {"question": QUESTION, "collections": [collection.pk]}, format="json")
    if documents.status_code == 404:
        assert_error(retrieved, 404)
        assert "gravity" not in (documents.content + retrieved.content).decode().lower()
        return False
    assert documents.status_code == 200 and retrieved.status_code == 200, (
        documents.content,
        retrieved.content,
    )
    assert retrieved.json()["results"], "a readable collection with a document returns chunks"
    assert retrieved.json()["results"][0]["collection_id"] == collection.pk
    return True


def profile_results(client, profile_id: int) -> list:
    response = client.post(RETRIEVE, {"question": QUESTION, "profile": profile_id}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["results"]


def listing(client, collection_id: int, **params) -> dict | None:
    body = client.get(MARKET, params).json()
    return next((row for row in body["results"] if row["id"] == collection_id), None)


@pytest.mark.django_db(transaction=True)
def test_subscribing_grants_access_and_unsubscribing_ends_it(bearer, alice, bob, charlie, hills):
    as_bob, as_charlie = bearer(bob), bearer(charlie)
    row = listing(as_bob, hills.pk)
    assert row == {
        **row,
        "name": "Odd places",
        "description": "Optical illusions in the landscape",
        "tags": ["geology", "illusions"],
        "visibility": "private",
        "owner": "alice",
        "is_owner": False,
        "document_count": 1,
        "subscriber_count": 0,
        "subscribed": False,
    }
    assert not can_read(as_bob, hills)
    assert_error(as_bob.get(f"/api/v1/collections/{hills.pk}/"), 404)

    created = as_bob.post(subscribe_url(hills.pk))
    assert created.status_code == 201, created.content
    assert created.json() | {"id": 0, "created_at": "", "updated_at": ""} == {
        "id": 0,
        "collection": hills.pk,
        "collection_name": "Odd places",
        "user": "bob",
        "is_active": True,
        "revoked_at": None,
        "created_at": "",
        "updated_at": "",
    }
    assert as_bob.post(subscribe_url(hills.pk)).status_code == 200  # idempotent
    assert listing(as_bob, hills.pk)["subscribed"] is True
    assert listing(as_charlie, hills.pk) | {"subscribed": None} == listing(as_bob, hills.pk) | {
        "subscribed": None
    }
    assert listing(as_charlie, hills.pk)["subscriber_count"] == 1
    assert can_read(as_bob, hills)
    assert hills.pk in [c["id"] for c in as_bob.get("/api/v1/collections/").json()["results"]]  # library

    profile = as_bob.post(
        "/api/v1/profiles/",
        {"name": "hills", "tag": "hills", "collections": [{"collection": hills.pk}]},
        format="json",
    )
    assert profile.status_code == 201, profile.content
    assert {r["collection_id"] for r in profile_results(as_bob, profile.json()["id"])} == {hills.pk}

    assert not can_read(as_charlie, hills)  # Charlie never reads it
    assert as_bob.delete(subscribe_url(hills.pk)).status_code == 204
    assert not can_read(as_bob, hills)
    assert profile_results(as_bob, profile.json()["id"]) == []
    assert hills.pk not in [c["id"] for c in as_bob.get("/api/v1/collections/").json()["results"]]
    assert listing(as_bob, hills.pk)["subscriber_count"] == 0
    assert as_bob.delete(subscribe_url(hills.pk)).status_code == 204  # idempotent

    again = as_bob.post(subscribe_url(hills.pk))  # re-activates the ended subscription
    assert again.status_code == 201 and Subscription.objects.filter(user=bob).count() == 1
    assert can_read(as_bob, hills)


@pytest.mark.django_db(transaction=True)
def test_owner_lists_and_revokes_subscriptions(bearer, alice, bob, charlie, hills):
    as_alice, as_bob, as_charlie = bearer(alice), bearer(bob), bearer(charlie)
    subscription_id = as_bob.post(subscribe_url(hills.pk)).json()["id"]
    profile = as_bob.post(
        "/api/v1/profiles/",
        {"name": "h", "tag": "h", "collections": [{"collection": hills.pk}]},
        format="json",
    ).json()
    url = f"/api/v1/collections/{hills.pk}/subscriptions/"
    rows = as_alice.get(url).json()["results"]
    assert [(r["id"], r["user"], r["is_active"]) for r in rows] == [(subscription_id, "bob", True)]

    assert_error(as_charlie.get(url), 404)
    assert_error(as_charlie.delete(f"{url}{subscription_id}/"), 404)
    assert_error(as_bob.get(url), 403)  # Bob reads the collection but does not own it
    assert_error(as_bob.delete(f"{url}{subscription_id}/"), 403)
    assert_error(as_alice.delete(f"{url}987654/"), 404)
    assert can_read(as_bob, hills)

    assert as_alice.delete(f"{url}{subscription_id}/").status_code == 204
    assert not can_read(as_bob, hills)
    assert profile_results(as_bob, profile["id"]) == []
    assert as_alice.get(url).json()["results"][0]["is_active"] is False
    assert can_read(as_alice, hills)


@pytest.mark.django_db(transaction=True)
def test_unlisting_removes_subscribers_access(bearer, alice, bob, hills):
    as_alice, as_bob = bearer(alice), bearer(bob)
    assert as_bob.post(subscribe_url(hills.pk)).status_code == 201
    assert can_read(as_bob, hills)
    unlisted = as_alice.patch(f"/api/v1/collections/{hills.pk}/", {"listed": False}, format="json")
    assert unlisted.status_code == 200 and unlisted.json()["listed"] is False
    assert not can_read(as_bob, hills)
    assert listing(as_bob, hills.pk) is None
    assert_error(as_bob.post(subscribe_url(hills.pk)), 404)
    assert as_bob.delete(subscribe_url(hills.pk)).status_code == 204  # he can still leave it


@pytest.mark.django_db
def test_cannot_subscribe_to_unlisted_missing_or_own(bearer, anon, alice, bob, world):
    as_alice, as_bob = bearer(alice), bearer(bob)
    for collection_id in [world["private"].pk, world["public"].pk, 987654]:
        assert_error(as_bob.post(subscribe_url(collection_id)), 404)
        assert_error(as_bob.delete(subscribe_url(collection_id)), 404)
    collection_update(collection=world["private"], listed=True)
    assert "own" in assert_error(as_alice.post(subscribe_url(world["private"].pk)), 400)["message"]
    assert not Subscription.objects.exists()
    assert_error(anon.post(subscribe_url(world["private"].pk)), 401)
    assert_error(anon.get(MARKET), 401)
    assert_error(as_bob.get(MARKET, {"search": "x" * 201}), 400)


@pytest.mark.django_db
def test_marketplace_search_and_public_listing(bearer, alice, bob, charlie, world):
    for key in ["private", "public", "admin"]:
        collection_update(collection=world[key], listed=True)
    collection_update(collection=world["private"], tags=["Geology", "maps"])
    as_charlie = bearer(charlie)
    names = lambda **params: sorted(r["name"] for r in as_charlie.get(MARKET, params).json()["results"])  # noqa: E731
    assert names() == ["alice private", "alice public", "handbook"]  # unlisted ones never appear
    assert names(search="geolog") == ["alice private"]  # by tag, case-insensitive
    assert names(search="OPEN") == ["alice public"]
    assert names(search="company hand") == ["handbook"]  # by description
    assert names(search="secret plans") == ["alice private"]
    assert names(search="nothing like it") == []
    assert_error(as_charlie.get(f"/api/v1/collections/{world['private'].pk}/"), 404)

    # A listed public collection is readable anyway; subscribing only adds it to the "Subscribed" list.
    assert as_charlie.post(subscribe_url(world["public"].pk)).status_code == 201
    subscribed = [r["name"] for r in as_charlie.get(MARKET).json()["results"] if r["subscribed"]]
    assert subscribed == ["alice public"]
    assert as_charlie.post(subscribe_url(world["admin"].pk)).status_code == 201  # admin-owned: allowed


@pytest.mark.security
@pytest.mark.django_db
def test_a_revoked_subscriber_stays_out_until_the_owner_reinstates_them(bearer, alice, bob, charlie, world):
    listed = collection_update(collection=world["private"], listed=True)
    as_alice, as_bob, as_charlie = bearer(alice), bearer(bob), bearer(charlie)
    detail, subscriptions = (
        f"/api/v1/collections/{listed.pk}/",
        f"/api/v1/collections/{listed.pk}/subscriptions/",
    )
    subscription_id = as_bob.post(subscribe_url(listed.pk)).json()["id"]
    assert as_bob.get(detail).status_code == 200
    assert as_alice.delete(f"{subscriptions}{subscription_id}/").status_code == 204
    assert_error(as_bob.get(detail), 404)

    # Subscribing again is refused, and says why; it changes nothing.
    assert "revoked" in assert_error(as_bob.post(subscribe_url(listed.pk)), 403)["message"]
    assert_error(as_bob.get(detail), 404)
    # Unlisting and listing again does not let him back in either.
    for flag in (False, True):
        assert as_alice.patch(detail, {"listed": flag}, format="json").status_code == 200
    assert_error(as_bob.post(subscribe_url(listed.pk)), 403)
    assert_error(as_bob.get(detail), 404)
    listing = next(r for r in as_bob.get(MARKET).json()["results"] if r["id"] == listed.pk)
    assert listing["subscribed"] is False
    row = as_alice.get(subscriptions).json()["results"][0]
    assert row["is_active"] is False and row["revoked_at"]

    # Only the owner lets him back in.
    reinstate = f"{subscriptions}{subscription_id}/reinstate/"
    assert_error(as_bob.post(reinstate), 404)
    assert_error(as_charlie.post(reinstate), 404)
    assert_error(as_alice.post(f"{subscriptions}987654/reinstate/"), 404)
    back = as_alice.post(reinstate)
    assert back.status_code == 200 and back.json()["is_active"] is True and back.json()["revoked_at"] is None
    assert as_bob.get(detail).status_code == 200
    assert as_bob.post(subscribe_url(listed.pk)).status_code == 200  # already active


@pytest.mark.security
@pytest.mark.django_db
def test_unlisting_ends_subscriptions_and_relisting_does_not_restore_them(bearer, alice, bob, world):
    listed = collection_update(collection=world["private"], listed=True)
    as_alice, as_bob = bearer(alice), bearer(bob)
    detail = f"/api/v1/collections/{listed.pk}/"
    assert as_bob.post(subscribe_url(listed.pk)).status_code == 201
    assert as_alice.patch(detail, {"listed": False}, format="json").status_code == 200
    assert as_alice.patch(detail, {"listed": True}, format="json").status_code == 200
    assert_error(as_bob.get(detail), 404)
    assert Subscription.objects.get(user=bob).is_active is False
    # Not revoked, only ended: he may subscribe again now that it is listed.
    assert as_bob.post(subscribe_url(listed.pk)).status_code == 201
    assert as_bob.get(detail).status_code == 200


@pytest.mark.security
@pytest.mark.django_db
def test_revoking_also_drops_the_share_link_grant(bearer, alice, bob, world):
    shared = collection_update(collection=world["unlisted"], listed=True)
    as_alice, as_bob = bearer(alice), bearer(bob)
    detail = f"/api/v1/collections/{shared.pk}/"
    token = as_alice.get(detail).json()["share_token"]
    assert as_bob.post(f"/api/v1/collections/link/{token}/").status_code == 200
    subscription_id = as_bob.post(subscribe_url(shared.pk)).json()["id"]
    assert as_alice.delete(f"{detail}subscriptions/{subscription_id}/").status_code == 204
    assert_error(as_bob.get(detail), 404)
    assert "revoked" in assert_error(as_bob.get(f"/api/v1/collections/link/{token}/"), 403)["message"]
    assert_error(as_bob.get(detail), 404)
