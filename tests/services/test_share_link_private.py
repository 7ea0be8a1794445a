"""Making a collection private ends its share link, as rotating it does.

Someone who opened an unlisted collection's link kept their grant through a spell of "private":
set unlisted again, the collection opened to them at once, with the owner never having shared it
anew. Now the change to private drops every grant and gives the collection a new link, on every
path that changes visibility (the API, the page, the admin); the old link opens nothing afterwards.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from knowledge.models import Collection, Document, LinkGrant
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.admin.test_content import _collection_change_form
from tests.api.test_marketplace import QUESTION, can_read

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]


@pytest.fixture
def unlisted(alice, corpus, no_llm) -> tuple[Collection, Document]:
    """Alice's unlisted collection with one ingested document."""
    collection = collection_create(name="Odd places", owner=alice, visibility="unlisted")
    path = corpus / "text" / "gravity_hill.md"
    document = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    ).document
    assert Document.objects.get(pk=document.pk).status == Document.Status.READY
    return collection, document


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='reader')[1]}")
    return client


def _web(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def holder_reads(api: APIClient, web: Client, collection: Collection, document: Document) -> dict[str, bool]:
    """Every way the link holder read the collection: whether each still answers with its content."""
    asked = {"question": QUESTION, "collections": [collection.pk]}
    return {
        "api documents and retrieve": can_read(api, collection),
        "api collection": api.get(f"/api/v1/collections/{collection.pk}/").status_code == 200,
        "api document": api.get(f"/api/v1/documents/{document.pk}/").status_code == 200,
        "api query": api.post("/api/v1/query/", asked, format="json").status_code == 200,
        "page collection": web.get(f"/collections/{collection.pk}/").status_code == 200,
        "page document": web.get(f"/documents/{document.pk}/view/").status_code == 200,
        "page chat library": collection.name in web.get("/chat/").content.decode(),
    }


def _set_visibility(path: str, collection: Collection, visibility: str, admin_client) -> None:
    """The owner (or, in the admin, an operator) changes who may read the collection."""
    if path == "api":
        response = _api(collection.owner).patch(
            f"/api/v1/collections/{collection.pk}/", {"visibility": visibility}, format="json"
        )
        assert response.status_code == 200, response.content
    elif path == "page":
        response = _web(collection.owner).post(
            f"/collections/{collection.pk}/settings/", {"action": "visibility", "visibility": visibility}
        )
        assert response.status_code == 302, response.content[:500]
    else:
        collection.refresh_from_db()
        url = f"/admin/knowledge/collection/{collection.pk}/change/"
        response = admin_client.post(url, _collection_change_form(collection, visibility=visibility))
        assert response.status_code == 302, response.content.decode()[:2000]
    collection.refresh_from_db()
    assert collection.visibility == visibility


@pytest.mark.parametrize("path", ["api", "page", "admin"])
def test_a_spell_of_private_ends_the_link_holders_access_for_good(unlisted, bob, admin_client, path):
    collection, document = unlisted
    as_bob, bob_web = _api(bob), _web(bob)
    old_token = collection.share_token
    assert bob_web.post(f"/collections/link/{old_token}/").status_code == 302  # he opens the link
    assert all(holder_reads(as_bob, bob_web, collection, document).values())

    _set_visibility(path, collection, "private", admin_client)
    assert not LinkGrant.objects.filter(collection=collection).exists()
    assert collection.share_token != old_token  # the link was rotated with the change
    _set_visibility(path, collection, "unlisted", admin_client)

    reads = holder_reads(as_bob, bob_web, collection, document)
    assert not any(reads.values()), reads
    # The link he held opens nothing: sharing again takes the new one, which the owner hands out.
    assert as_bob.get(f"/api/v1/collections/link/{old_token}/").status_code == 404
    assert bob_web.post(f"/collections/link/{old_token}/").status_code == 404
    assert not any(holder_reads(as_bob, bob_web, collection, document).values())
    assert as_bob.post(f"/api/v1/collections/link/{collection.share_token}/").status_code == 200
    assert all(holder_reads(as_bob, bob_web, collection, document).values())
