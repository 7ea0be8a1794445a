"""/api/v1/profiles/: own rag_focused profiles, validated overrides, readable collections only."""

from __future__ import annotations

import pytest

from knowledge.models import Profile
from knowledge.parameter_values import global_setting_set
from knowledge.parameters import PARAMETERS
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/profiles/"


def test_create_read_update_delete(bearer, alice, world):
    client = bearer(alice)
    created = client.post(
        URL,
        {
            "name": "Research",
            "tag": "research",
            "knowledge_overrides": {"maxDocs": 5, "hybrid": "false"},
            "collections": [
                {"collection": world["private"].pk, "reranking": True},
                {"collection": world["admin"].pk},
            ],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["owner"] == "alice" and body["profile_type"] == "rag_focused" and body["editable"] is True
    assert body["knowledge_overrides"] == {"maxDocs": 5, "hybrid": False}  # validated and typed
    assert body["collections"] == [
        {"collection": world["private"].pk, "reranking": True},
        {"collection": world["admin"].pk, "reranking": False},
    ]
    assert set(body["effective_config"]) == set(PARAMETERS)
    assert body["effective_config"]["maxDocs"] == {"value": 5, "source": "profile"}
    assert body["effective_config"]["rrfK"] == {"value": 60, "source": "global"}
    assert body["ignored_overrides"] == []

    url = f"{URL}{body['id']}/"
    changed = client.patch(
        url, {"tag": "res", "collections": [{"collection": world["public"].pk}]}, format="json"
    )
    assert changed.status_code == 200
    assert changed.json()["tag"] == "res" and changed.json()["name"] == "Research"
    assert changed.json()["collections"] == [{"collection": world["public"].pk, "reranking": False}]
    assert changed.json()["knowledge_overrides"] == {"maxDocs": 5, "hybrid": False}

    listed = client.get(URL).json()
    assert [p["name"] for p in listed["results"]] == ["Research"] and listed["results"][0][
        "effective_config"
    ] is None
    config = client.get(f"{url}effective-config/").json()
    assert config["maxDocs"] == {"value": 5, "source": "profile"}

    assert client.delete(url).status_code == 204
    assert not Profile.objects.exists()


def test_charlie_cannot_see_or_change_alices_profiles(bearer, alice, charlie, world):
    profile = Profile.objects.create(owner=alice, name="secret research", tag="sr")
    as_charlie = bearer(charlie)
    assert as_charlie.get(URL).json()["count"] == 0
    url = f"{URL}{profile.pk}/"
    assert_error(as_charlie.get(url), 404, "not_found")
    assert_error(as_charlie.get(f"{url}effective-config/"), 404)
    assert_error(as_charlie.patch(url, {"name": "mine now"}, format="json"), 404)
    assert_error(as_charlie.delete(url), 404)
    assert Profile.objects.get(pk=profile.pk).name == "secret research"


def test_operator_profiles_are_listed_read_only(bearer, charlie):
    operator = Profile.objects.create(owner=None, name="Company", tag="company")
    client = bearer(charlie)
    row = client.get(URL).json()["results"][0]
    assert row["id"] == operator.pk and row["owner"] is None and row["editable"] is False
    assert_error(client.patch(f"{URL}{operator.pk}/", {"name": "x"}, format="json"), 403)
    assert_error(client.delete(f"{URL}{operator.pk}/"), 403)


def test_only_readable_collections_can_be_added(bearer, alice, charlie, world):
    client = bearer(charlie)
    for collection_id in [world["private"].pk, world["unlisted"].pk, 987654]:
        refused = client.post(
            URL, {"name": "p", "tag": "p", "collections": [{"collection": collection_id}]}, format="json"
        )
        assert "no such collection" in str(assert_error(refused, 400)["fields"]["collections"])
    ok = client.post(
        URL,
        {
            "name": "p",
            "tag": "p",
            "collections": [{"collection": world["admin"].pk}, {"collection": world["public"].pk}],
        },
        format="json",
    )
    assert ok.status_code == 201
    assert not Profile.objects.filter(owner=charlie).exclude(pk=ok.json()["id"]).exists()


def test_locked_parameters_are_accepted_but_reported_ignored(bearer, alice):
    global_setting_set(key="maxDocs", value=3, lock=True)
    response = bearer(alice).post(
        URL, {"name": "p", "tag": "p", "knowledge_overrides": {"maxDocs": 9, "rrfK": 10}}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["knowledge_overrides"] == {"maxDocs": 9, "rrfK": 10}
    assert body["ignored_overrides"] == ["maxDocs"]
    assert body["effective_config"]["maxDocs"] == {"value": 3, "source": "locked"}
    assert body["effective_config"]["rrfK"] == {"value": 10, "source": "profile"}


def test_bad_input(bearer, alice, world):
    client = bearer(alice)
    cases = [
        ({"tag": "p"}, "name"),
        ({"name": "p", "tag": "not a slug!"}, "tag"),
        ({"name": "p", "tag": "p", "knowledge_overrides": {"maxDocs": 1000}}, "knowledge_overrides"),
        ({"name": "p", "tag": "p", "knowledge_overrides": {"unknown": 1}}, "knowledge_overrides"),
        ({"name": "p", "tag": "p", "knowledge_overrides": "maxDocs=3"}, "knowledge_overrides"),
        ({"name": "p", "tag": "p", "collections": [world["private"].pk]}, "collections"),
        ({"name": "p", "tag": "p", "collections": [{"collection": "x"}]}, "collections"),
        (
            {"name": "p", "tag": "p", "collections": [{"collection": world["private"].pk, "weight": 2}]},
            "collections",
        ),
        (
            {"name": "p", "tag": "p", "collections": [{"collection": world["private"].pk}] * 2},
            "collections",
        ),
        ({"name": "p", "tag": "p", "owner": "bob"}, "owner"),
    ]
    for payload, field in cases:
        assert field in assert_error(client.post(URL, payload, format="json"), 400)["fields"], payload
    assert not Profile.objects.exists()

    client.post(URL, {"name": "p", "tag": "p"}, format="json")
    duplicate = client.post(URL, {"name": "p", "tag": "q"}, format="json")
    assert "already have" in assert_error(duplicate, 400)["message"]
