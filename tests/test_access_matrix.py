"""Alice / Bob / Charlie over every page and endpoint: what a user may not read is 404, everywhere.

Alice owns a private, an unlisted, a public and (via staff) sees an admin-owned
collection, each with a document; she has a chat session, a profile and a
token. Charlie has nothing of hers: every path to her private things answers
404 (never 403, never data), lists never show them, and searches never return
their chunks even when they are the best match. Her unlisted collection is the
same to him until he opens its share link: walking the (sequential) ids finds
nothing; with the link he reads it; when she rotates the link he is out again.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.tokens import token_create
from knowledge.chat import chat_ask
from knowledge.models import ChatSession, Document, Profile, ProfileCollection
from knowledge.services.collections import collection_create
from knowledge.services.documents import document_upload

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


@pytest.fixture
def alices(alice, corpus, no_llm):
    path = corpus / "text" / "gravity_hill.md"
    made = {}
    for visibility in ("private", "unlisted", "public"):
        made[visibility] = collection_create(name=f"alice {visibility}", owner=alice, visibility=visibility)
    made["admin"] = collection_create(name="handbook", owner=None)
    docs = {}
    for key, collection in made.items():
        result = document_upload(collection=collection, filename=path.name, data=path.read_bytes())
        docs[key] = Document.objects.get(pk=result.document.pk)
    profile = Profile.objects.create(owner=alice, name="alice profile", tag="ap")
    ProfileCollection.objects.create(profile=profile, collection=made["private"])
    turn = chat_ask(user=alice, question=QUESTION, collection_ids=[made["private"].pk])
    token, _ = token_create(user=alice, name="alice token")
    return {"c": made, "d": docs, "profile": profile, "session": turn.session, "token": token}


@pytest.fixture
def charlie_api(charlie):
    _, secret = token_create(user=charlie, name="charlie")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def charlie_web(charlie):
    client = Client()
    client.force_login(charlie)
    return client


def _private_api_calls(a, key="private"):
    c, d = a["c"][key].pk, a["d"][key].pk
    return [
        ("get", f"/api/v1/collections/{c}/", None),
        ("patch", f"/api/v1/collections/{c}/", {"description": "mine now"}),
        ("delete", f"/api/v1/collections/{c}/", None),
        ("get", f"/api/v1/collections/{c}/documents/", None),
        ("post", f"/api/v1/collections/{c}/subscribe/", None),
        ("get", f"/api/v1/collections/{c}/subscriptions/", None),
        ("get", f"/api/v1/documents/{d}/", None),
        ("delete", f"/api/v1/documents/{d}/", None),
        ("post", f"/api/v1/documents/{d}/retry/", None),
        ("post", f"/api/v1/documents/{d}/reindex/", None),
        ("post", "/api/v1/retrieve/", {"question": QUESTION, "collections": [c]}),
        ("post", "/api/v1/query/", {"question": QUESTION, "collections": [c]}),
        ("post", "/api/v1/retrieve/", {"question": QUESTION, "profile": a["profile"].pk}),
        ("get", f"/api/v1/profiles/{a['profile'].pk}/", None),
        ("delete", f"/api/v1/profiles/{a['profile'].pk}/", None),
        ("get", f"/api/v1/sessions/{a['session'].pk}/", None),
        ("post", "/api/v1/query/", {"question": QUESTION, "session": a["session"].pk}),
        ("post", f"/api/v1/sessions/{a['session'].pk}/turns/0/feedback/", {"rating": "down"}),
        ("patch", f"/api/v1/sessions/{a['session'].pk}/", {"title": "mine now"}),
        ("delete", f"/api/v1/sessions/{a['session'].pk}/", None),
        ("delete", f"/api/v1/tokens/{a['token'].pk}/", None),
    ]


def _private_pages(a, key="private"):
    c, d = a["c"][key].pk, a["d"][key].pk
    return [
        ("get", f"/collections/{c}/", None),
        ("get", f"/collections/{c}/documents.json", None),
        ("post", f"/collections/{c}/upload/", {}),
        ("post", f"/collections/{c}/listing/", {"listed": "1"}),
        ("post", f"/documents/{d}/retry/", None),
        ("post", f"/documents/{d}/delete/", None),
        ("get", f"/documents/{d}/view/", None),
        ("get", f"/documents/{d}/file/", None),
        ("get", f"/chat/?session={a['session'].pk}", None),
        ("get", f"/chat/?collection={c}", None),
        ("post", "/chat/ask/", {"question": QUESTION, "session": a["session"].pk}),
        ("post", "/marketplace/" + str(c) + "/subscribe/", None),
        ("post", "/chat/ask/", {"question": QUESTION, "collections": [c]}),
        ("post", "/profiles/", {"name": "mine", "tag": "mine", "collections": [c]}),
    ]


def test_charlie_gets_404_for_every_api_path_to_alices_private_things(alices, charlie_api):
    for method, url, body in _private_api_calls(alices):
        response = getattr(charlie_api, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code, response.content[:300])
    # Nothing was changed through any of those calls.
    alices["c"]["private"].refresh_from_db()
    assert alices["c"]["private"].description == ""
    assert Document.objects.filter(pk=alices["d"]["private"].pk, status="ready").exists()
    session = ChatSession.objects.get(pk=alices["session"].pk)  # not renamed, deleted or rated
    assert session.title != "mine now" and session.turns.get(index=0).feedback_rating == ""


def test_charlie_gets_404_for_every_page_to_alices_private_things(alices, charlie_web):
    for method, url, body in _private_pages(alices):
        response = getattr(charlie_web, method)(url, body or {})
        assert response.status_code == 404, (method, url, response.status_code)
    assert not Profile.objects.filter(owner__username="charlie").exists()


def test_lists_show_charlie_only_what_he_may_see(alices, charlie_api, charlie_web):
    names = {c["name"] for c in charlie_api.get("/api/v1/collections/").json()["results"]}
    assert names == {"alice public", "handbook"}  # unlisted is reachable by id only
    page = charlie_web.get("/collections/").content.decode()
    assert "alice public" in page and "handbook" in page
    assert "alice private" not in page and "alice unlisted" not in page
    assert charlie_api.get("/api/v1/sessions/").json()["count"] == 0
    assert charlie_api.get("/api/v1/profiles/").json()["count"] == 0
    assert "alice private" not in charlie_web.get("/marketplace/").content.decode()
    assert "alice private" not in charlie_web.get("/chat/").content.decode()


def test_admin_owned_and_public_are_readable_by_id(alices, charlie_api, charlie_web):
    for key in ("public", "admin"):
        cid, did = alices["c"][key].pk, alices["d"][key].pk
        assert charlie_api.get(f"/api/v1/collections/{cid}/").status_code == 200, key
        assert charlie_api.get(f"/api/v1/documents/{did}/").status_code == 200, key
        assert charlie_web.get(f"/collections/{cid}/").status_code == 200, key
        assert charlie_web.get(f"/documents/{did}/view/").status_code == 200, key
        # Readable is not writable: owners (or staff, for admin-owned) only.
        assert charlie_api.delete(f"/api/v1/documents/{did}/").status_code == 403, key


@pytest.mark.security
def test_charlie_walking_ids_finds_nothing_of_alices_unlisted_collection(alices, charlie_api, charlie_web):
    for method, url, body in _private_api_calls(alices, "unlisted"):
        response = getattr(charlie_api, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code, response.content[:300])
    for method, url, body in _private_pages(alices, "unlisted"):
        response = getattr(charlie_web, method)(url, body or {})
        assert response.status_code == 404, (method, url, response.status_code)
    # Walking every id around hers: only what he may read answers, hers never does.
    unlisted = alices["c"]["unlisted"]
    readable = {alices["c"]["public"].pk, alices["c"]["admin"].pk}
    ids = [c.pk for c in alices["c"].values()]
    for cid in range(max(1, min(ids) - 2), max(ids) + 3):
        expected = 200 if cid in readable else 404
        assert charlie_api.get(f"/api/v1/collections/{cid}/").status_code == expected, cid
        assert charlie_web.get(f"/collections/{cid}/").status_code == expected, cid
    public = alices["c"]["public"]
    assert charlie_api.get(f"/api/v1/collections/{public.pk}/").json()["share_token"] is None  # owners only
    assert public.share_token not in charlie_web.get(f"/collections/{public.pk}/").content.decode()
    assert unlisted.share_token not in charlie_web.get("/collections/").content.decode()


def _share_token(owner_api, collection_id) -> str:
    body = owner_api.get(f"/api/v1/collections/{collection_id}/").json()
    assert body["share_url"].endswith(f"/collections/link/{body['share_token']}/")
    return body["share_token"]


@pytest.fixture
def alice_api(alices, alice):
    _, secret = token_create(user=alice, name="alice api")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.mark.security
def test_the_share_link_lets_charlie_read_until_alice_rotates_it(
    alices, alice_api, charlie_api, charlie_web, bob
):
    unlisted, document = alices["c"]["unlisted"], alices["d"]["unlisted"]
    token = _share_token(alice_api, unlisted.pk)
    assert len(token) >= 32

    opened = charlie_web.post(f"/collections/link/{token}/")
    assert opened.status_code == 302 and opened["Location"] == f"/collections/{unlisted.pk}/"
    assert charlie_web.get(f"/collections/{unlisted.pk}/").status_code == 200
    assert charlie_web.get(f"/documents/{document.pk}/view/").status_code == 200
    assert charlie_api.get(f"/api/v1/collections/{unlisted.pk}/").json()["share_token"] is None
    assert charlie_api.get(f"/api/v1/documents/{document.pk}/").status_code == 200
    found = charlie_api.post(
        "/api/v1/retrieve/", {"question": QUESTION, "collections": [unlisted.pk]}, format="json"
    )
    assert found.status_code == 200 and {r["document_id"] for r in found.json()["results"]} == {document.pk}
    assert "alice unlisted" in charlie_web.get("/chat/").content.decode()  # in his library now
    # Readable is not writable.
    assert charlie_api.delete(f"/api/v1/documents/{document.pk}/").status_code == 403

    # The API follows the same link: Bob opens it with his token.
    bob_api = APIClient()
    bob_api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=bob, name='b')[1]}")
    assert bob_api.get(f"/api/v1/collections/{unlisted.pk}/").status_code == 404
    by_link = bob_api.post(f"/api/v1/collections/link/{token}/")
    assert by_link.status_code == 200 and by_link.json()["id"] == unlisted.pk
    assert bob_api.get(f"/api/v1/collections/{unlisted.pk}/").status_code == 200

    # Rotating the link drops everyone who held the old one; the new link works again.
    rotated = alice_api.post(f"/api/v1/collections/{unlisted.pk}/share-link/")
    assert rotated.status_code == 200 and rotated.json()["share_token"] not in ("", None, token)
    for client in (charlie_api, bob_api):
        assert client.get(f"/api/v1/collections/{unlisted.pk}/").status_code == 404
        assert client.get(f"/api/v1/documents/{document.pk}/").status_code == 404
        assert client.get(f"/api/v1/collections/link/{token}/").status_code == 404
    assert charlie_web.get(f"/collections/link/{token}/").status_code == 404
    assert charlie_web.post(f"/collections/link/{rotated.json()['share_token']}/").status_code == 302
    assert charlie_web.get(f"/collections/{unlisted.pk}/").status_code == 200
    assert alice_api.post(f"/api/v1/collections/{alices['c']['public'].pk}/share-link/").status_code == 200
    assert charlie_api.post(f"/api/v1/collections/{unlisted.pk}/share-link/").status_code == 403


@pytest.mark.security
def test_a_link_opens_only_an_unlisted_collection(alices, alice_api, charlie_api, charlie_web):
    private = alices["c"]["private"]
    token = _share_token(alice_api, private.pk)  # the owner sees it; it works once she makes it unlisted
    assert charlie_web.get(f"/collections/link/{token}/").status_code == 404
    assert charlie_api.get(f"/api/v1/collections/link/{token}/").status_code == 404
    assert charlie_api.get("/api/v1/collections/link/not-a-real-token-at-all-not-at-all/").status_code == 404
    assert charlie_web.get("/collections/link/%00/").status_code == 400  # NUL: bad input, not a lookup
    assert charlie_api.get(f"/api/v1/collections/{private.pk}/").status_code == 404
    alice_api.patch(f"/api/v1/collections/{private.pk}/", {"visibility": "unlisted"}, format="json")
    assert charlie_api.post(f"/api/v1/collections/link/{token}/").status_code == 200
    # Made private again: the link and what it granted stop working at once.
    alice_api.patch(f"/api/v1/collections/{private.pk}/", {"visibility": "private"}, format="json")
    assert charlie_api.get(f"/api/v1/collections/{private.pk}/").status_code == 404
    assert charlie_api.get(f"/api/v1/collections/link/{token}/").status_code == 404


def test_search_never_returns_alices_private_chunks_even_as_the_best_match(alices, charlie_api):
    ids = [alices["c"][key].pk for key in ("public", "admin")]
    response = charlie_api.post(
        "/api/v1/retrieve/", {"question": QUESTION, "collections": ids, "k": 10}, format="json"
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert results and {r["collection_id"] for r in results} <= set(ids)
    private_docs = {alices["d"]["private"].pk, alices["d"]["unlisted"].pk}
    assert not private_docs & {r["document_id"] for r in results + response.json()["references"]}
