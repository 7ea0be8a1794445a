"""/api/v1/collections/: the Alice/Bob/Charlie access pattern, filters, pagination, writes."""

from __future__ import annotations

import pytest

from knowledge.models import Collection
from knowledge.services.collections import collection_create
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/collections/"


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["name"] for row in response.json()["results"]]


def test_lists_show_what_each_user_may_see(bearer, alice, charlie, world):
    assert names(bearer(alice).get(URL)) == ["alice private", "alice public", "alice unlisted", "handbook"]
    # Charlie: public and admin-owned; never Alice's private, nor her unlisted one in lists.
    assert names(bearer(charlie).get(URL)) == ["alice public", "handbook"]


def test_detail_follows_readability_and_hides_existence(bearer, charlie, world):
    client = bearer(charlie)
    private = client.get(f"{URL}{world['private'].pk}/")
    missing = client.get(f"{URL}999999/")
    assert assert_error(private, 404, "not_found") == assert_error(missing, 404, "not_found")
    assert "secret plans" not in private.content.decode()

    # Unlisted means "only with the share link": by id alone it is as missing as the rest.
    unlisted = client.get(f"{URL}{world['unlisted'].pk}/")
    assert assert_error(unlisted, 404, "not_found") == assert_error(missing, 404, "not_found")
    admin = client.get(f"{URL}{world['admin'].pk}/").json()
    assert admin["is_admin_owned"] is True and admin["owner"] is None and admin["can_write"] is False


def test_only_owners_write(bearer, alice, bob, charlie, world):
    as_bob = bearer(bob)
    public = f"{URL}{world['public'].pk}/"
    assert bearer(bob).get(public).status_code == 200
    assert_error(
        as_bob.patch(public, {"description": "bob was here"}, format="json"), 403, "permission_denied"
    )
    assert_error(as_bob.delete(public), 403)
    assert_error(as_bob.patch(f"{URL}{world['private'].pk}/", {"description": "x"}, format="json"), 404)
    assert_error(as_bob.delete(f"{URL}{world['private'].pk}/"), 404)
    assert_error(bearer(charlie).patch(f"{URL}{world['admin'].pk}/", {"listed": True}, format="json"), 403)
    assert Collection.objects.get(pk=world["public"].pk).description == ""
    assert Collection.objects.count() == 5


def test_owner_changes_and_deletes(bearer, alice, charlie, world):
    client = bearer(alice)
    url = f"{URL}{world['private'].pk}/"
    response = client.patch(
        url,
        {"description": "now shared", "tags": ["a", "b"], "visibility": "public", "listed": True},
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["description"], body["tags"], body["visibility"], body["listed"]) == (
        "now shared",
        ["a", "b"],
        "public",
        True,
    )
    assert "alice private" in names(bearer(charlie).get(URL))

    assert client.delete(url).status_code == 204
    assert not Collection.objects.filter(pk=world["private"].pk).exists()
    assert_error(client.get(url), 404)


def test_patch_refuses_bad_input(bearer, alice, world):
    client = bearer(alice)
    url = f"{URL}{world['private'].pk}/"
    assert (
        "visibility"
        in assert_error(client.patch(url, {"visibility": "secret"}, format="json"), 400)["fields"]
    )
    assert "tags" in assert_error(client.patch(url, {"tags": "not-a-list"}, format="json"), 400)["fields"]
    assert "listed" in assert_error(client.patch(url, {"listed": "maybe"}, format="json"), 400)["fields"]
    assert "name" in assert_error(client.patch(url, {"name": "renamed"}, format="json"), 400)["fields"]
    assert Collection.objects.get(pk=world["private"].pk).visibility == "private"


def test_create(bearer, alice):
    client = bearer(alice)
    response = client.post(
        URL,
        {"name": "Papers", "description": "reading list", "tags": ["ml"], "visibility": "unlisted"},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["owner"] == "alice" and body["visibility"] == "unlisted" and body["tags"] == ["ml"]
    assert body["document_count"] == 0 and body["chunk_count"] == 0 and body["chunk_profile"] == "default"
    assert body["pending_chunk_profile"] is None and body["can_write"] is True

    duplicate = client.post(URL, {"name": "Papers"}, format="json")
    assert "already exists" in assert_error(duplicate, 400)["message"]
    assert_error(client.post(URL, {"visibility": "public"}, format="json"), 400)
    assert (
        "visibility"
        in assert_error(client.post(URL, {"name": "x", "visibility": 3}, format="json"), 400)["fields"]
    )


def test_only_staff_create_admin_owned(bearer, alice, make_user):
    refused = bearer(alice).post(URL, {"name": "Company", "admin_owned": True}, format="json")
    assert_error(refused, 403)
    assert not Collection.objects.filter(name="Company").exists()
    staff = make_user("sam", is_staff=True)
    created = bearer(staff).post(URL, {"name": "Company", "admin_owned": True}, format="json")
    assert created.status_code == 201 and created.json()["is_admin_owned"] is True
    assert Collection.objects.get(name="Company").owner is None


def test_filters(bearer, alice, charlie, world):
    client = bearer(alice)
    assert names(client.get(URL, {"visibility": "public"})) == ["alice public"]
    assert names(client.get(URL, {"search": "HANDBOOK"})) == ["handbook"]
    assert names(client.get(URL, {"search": "secret"})) == ["alice private"]  # description
    assert names(client.get(URL, {"owner": "me"})) == ["alice private", "alice public", "alice unlisted"]
    assert names(bearer(charlie).get(URL, {"owner": "me"})) == []
    assert names(bearer(charlie).get(URL, {"search": "secret"})) == []
    assert "visibility" in assert_error(client.get(URL, {"visibility": "everyone"}), 400)["fields"]
    assert "owner" in assert_error(client.get(URL, {"owner": "bob"}), 400)["fields"]


def test_pagination(bearer, alice):
    for i in range(55):
        collection_create(name=f"c{i:02d}", owner=alice)
    client = bearer(alice)
    first = client.get(URL).json()
    assert first["count"] == 55 and len(first["results"]) == 50 and first["previous"] is None
    second = client.get(first["next"]).json()
    assert [r["name"] for r in second["results"]] == [f"c{i:02d}" for i in range(50, 55)]
    assert second["next"] is None
    assert len(client.get(URL, {"page_size": 7}).json()["results"]) == 7
    assert len(client.get(URL, {"page_size": 500}).json()["results"]) == 55  # capped at 200, not refused
    assert_error(client.get(URL, {"page": 9}), 404)
    assert_error(client.get(URL, {"page": "x"}), 404)


def test_counts_come_from_one_query_per_page(bearer, alice, django_assert_max_num_queries):
    for i in range(30):
        collection_create(name=f"c{i:02d}", owner=alice)
    client = bearer(alice)
    client.get(URL)  # the token's first use writes last_used_at
    with django_assert_max_num_queries(3):  # token, count, page (the counts are subqueries)
        response = client.get(URL)
    assert len(response.json()["results"]) == 30
