"""/api/v1/collections/: the embedding model is chosen on create, changed on update, refused when unknown."""

from __future__ import annotations

import pytest

from knowledge.clients.embedding_registry import E5_SMALL, MINILM
from knowledge.models import Collection
from knowledge.services.collections import collection_create
from tests.api.conftest import assert_error
from tests.conftest import throttle_rates

pytestmark = pytest.mark.django_db

URL = "/api/v1/collections/"


def test_a_new_collection_takes_the_default_model_or_the_one_chosen(bearer, alice):
    client = bearer(alice)
    default = client.post(URL, {"name": "english"}, format="json")
    chosen = client.post(URL, {"name": "multilingual", "embedding_model": E5_SMALL}, format="json")
    assert default.status_code == 201 and chosen.status_code == 201, (default.content, chosen.content)
    assert default.json()["embedding_model"] == MINILM
    assert chosen.json()["embedding_model"] == E5_SMALL
    assert chosen.json()["pending_embedding_model"] == ""
    assert Collection.objects.get(name="multilingual").embedding_model == E5_SMALL


def test_an_unknown_model_is_refused_with_the_known_ones_and_nothing_is_created(bearer, alice):
    response = bearer(alice).post(URL, {"name": "x", "embedding_model": "bert-base-uncased"}, format="json")
    body = assert_error(response, 400)
    message = str(body)
    assert "bert-base-uncased" in message and MINILM in message and E5_SMALL in message
    assert not Collection.objects.filter(name="x").exists()


def test_the_owner_changes_the_model_of_an_empty_collection_at_once(bearer, alice):
    collection = collection_create(name="notes", owner=alice)
    response = bearer(alice).patch(f"{URL}{collection.pk}/", {"embedding_model": E5_SMALL}, format="json")
    assert response.status_code == 200, response.content
    # No document to re-embed: nothing to wait for.
    assert response.json()["embedding_model"] == E5_SMALL
    assert response.json()["pending_embedding_model"] == ""


def test_an_update_to_an_unknown_model_is_refused_and_changes_nothing(bearer, alice):
    collection = collection_create(name="notes", owner=alice)
    url = f"{URL}{collection.pk}/"
    response = bearer(alice).patch(url, {"embedding_model": "nope", "description": "new"}, format="json")
    assert "nope" in str(assert_error(response, 400))
    collection.refresh_from_db()
    assert (collection.embedding_model, collection.pending_embedding_model) == (MINILM, "")
    assert collection.description == ""


def test_only_the_owner_chooses_the_model(bearer, alice, bob, charlie):
    private = collection_create(name="private", owner=alice)
    public = collection_create(name="public", owner=alice, visibility=Collection.Visibility.PUBLIC)
    body = {"embedding_model": E5_SMALL}
    assert_error(bearer(charlie).patch(f"{URL}{private.pk}/", body, format="json"), 404)
    assert_error(bearer(bob).patch(f"{URL}{public.pk}/", body, format="json"), 403)
    assert set(Collection.objects.values_list("embedding_model", flat=True)) == {MINILM}


@pytest.mark.security
def test_model_changes_count_as_writes(bearer, alice, settings):
    """Each change re-embeds every document: switching back and forth is held to the writes rate."""
    throttle_rates(settings, writes="2/minute")
    collection = collection_create(name="flip", owner=alice)
    client = bearer(alice)
    for model in (E5_SMALL, MINILM):
        response = client.patch(f"{URL}{collection.pk}/", {"embedding_model": model}, format="json")
        assert response.status_code == 200, response.content
    response = client.patch(f"{URL}{collection.pk}/", {"embedding_model": E5_SMALL}, format="json")
    assert response.status_code == 429, response.content
    assert Collection.objects.get(pk=collection.pk).embedding_model == MINILM
    # A change of anything else is not a write of that kind.
    response = client.patch(f"{URL}{collection.pk}/", {"description": "notes"}, format="json")
    assert response.status_code == 200, response.content
