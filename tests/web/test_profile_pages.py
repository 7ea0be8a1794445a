"""Profiles page: create and edit own profiles, choose collections, overrides; locked shown as locked."""

from __future__ import annotations

import pytest
from django.test import Client

from knowledge.models import Profile, RerankEndpoint
from knowledge.parameter_values import global_setting_set
from knowledge.services.collections import collection_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_client(alice):
    client = Client()
    client.force_login(alice)
    return client


def test_create_and_edit_a_profile_with_collections_and_overrides(alice_client, alice):
    mine = collection_create(name="mine", owner=alice)
    response = alice_client.post(
        "/profiles/",
        {
            "name": "Support",
            "tag": "support",
            "collections": [mine.pk],
            "rerank": [mine.pk],
            "override_maxDocs": "5",
            "override_freshnessWeight": "",
        },
    )
    profile = Profile.objects.get(owner=alice, name="Support")
    assert response.status_code == 302
    assert profile.knowledge_overrides == {"maxDocs": 5}
    assert list(profile.profile_collections.values_list("collection_id", "reranking")) == [(mine.pk, True)]

    alice_client.post(
        f"/profiles/{profile.pk}/", {"name": "Support", "tag": "support", "override_maxDocs": "7"}
    )
    profile.refresh_from_db()
    assert profile.knowledge_overrides == {"maxDocs": 7}
    assert profile.profile_collections.count() == 0


def test_locked_settings_are_shown_locked_and_cannot_be_overridden(alice_client, alice):
    global_setting_set(key="maxDocs", value=4, lock=True)
    page = alice_client.get("/profiles/").content.decode()
    assert 'name="override_maxDocs"' not in page and "locked" in page
    alice_client.post("/profiles/", {"name": "P", "tag": "p", "override_maxDocs": "9"})
    assert Profile.objects.get(name="P").knowledge_overrides == {}


def test_bad_values_and_foreign_collections_and_profiles_are_refused(alice_client, alice, bob):
    secret = collection_create(name="bob secret", owner=bob)
    response = alice_client.post("/profiles/", {"name": "P", "tag": "p", "override_minRelevanceScore": "1.7"})
    assert response.status_code == 400 and b"at most 1.0" in response.content
    assert (
        alice_client.post("/profiles/", {"name": "P", "tag": "p", "collections": [secret.pk]}).status_code
        == 404
    )
    bobs = Profile.objects.create(owner=bob, name="bob", tag="bob")
    assert alice_client.get(f"/profiles/{bobs.pk}/").status_code == 404
    assert not Profile.objects.filter(owner=alice).exists()


def test_the_reranker_is_chosen_on_the_page_and_the_marked_collections_stay_marked(alice_client, alice):
    mine = collection_create(name="mine", owner=alice)
    RerankEndpoint.objects.create(name="tei/bge-reranker-base", base_url="http://127.0.0.1:9/v1")
    form = {"name": "Support", "tag": "support", "collections": [mine.pk], "rerank": [mine.pk]}
    alice_client.post("/profiles/", {**form, "reranker": "tei/bge-reranker-base"})
    profile = Profile.objects.get(owner=alice, name="Support")
    assert profile.reranker.name == "tei/bge-reranker-base"
    page = alice_client.get(f"/profiles/{profile.pk}/").content.decode()
    assert '<option value="tei/bge-reranker-base" selected>' in page
    assert f'name="rerank" value="{mine.pk}" checked' in page  # saved again as it is, it keeps reranking
    alice_client.post(f"/profiles/{profile.pk}/", {**form, "reranker": ""})
    profile.refresh_from_db()
    assert profile.reranker is None  # the language model again
    response = alice_client.post(f"/profiles/{profile.pk}/", {**form, "reranker": "nope"})
    assert "no rerank endpoint named &#x27;nope&#x27;" in response.content.decode()
    profile.refresh_from_db()
    assert profile.reranker is None
