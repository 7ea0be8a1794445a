"""Writes share one per-user rate on every path: pages, the API, MCP tools and the admin.

Uploads count per file, so a page request of many files cannot get round the rate;
collections created, re-indexes, retries, subscribing and unsubscribing share the "writes" rate.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from mcp import Client
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from accounts.models import AuditEvent
from knowledge.mcp.identity import NamedUserIdentity
from knowledge.mcp.server import build_server
from knowledge.models import Collection, Document, Subscription
from knowledge.services.collections import collection_create, collection_update
from knowledge.services.documents import DocumentUpload, document_upload
from tests.conftest import throttle_rates
from tests.mcp.conftest import run

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_per_minute(settings):
    throttle_rates(settings, uploads="2/minute", writes="2/minute", retrieve="2/minute")


@pytest.fixture
def no_persistent_connections():
    """MCP tool calls run in worker threads that would keep their connection; close each (as in tests/mcp)."""
    database = connections.settings["default"]
    saved = database["CONN_MAX_AGE"]
    database["CONN_MAX_AGE"] = 0
    yield
    database["CONN_MAX_AGE"] = saved


@pytest.fixture
def page(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def api(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=alice, name='t')[1]}")
    return client


def text_file(corpus, name: str = "gravity_hill.md") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (corpus / "text" / name).read_bytes(), content_type="text/plain")


def assert_refused_page(response) -> None:
    assert response.status_code == 429, response.content[:300]
    assert "too many" in response.content.decode().lower()
    assert int(response["Retry-After"]) > 0


def assert_refused_api(response) -> None:
    assert response.status_code == 429, response.content[:300]
    assert response.json()["error"]["code"] == "throttled"
    assert int(response["Retry-After"]) > 0


def test_a_page_upload_counts_every_file_and_shares_the_count_with_the_api(
    page, api, alice, corpus, two_per_minute
):
    notes = collection_create(name="notes", owner=alice)
    url = f"/collections/{notes.pk}/upload/"
    many = [text_file(corpus, name) for name in ("gravity_hill.md", "bates.txt", "obama.txt")]
    response = page.post(url, {"file": many})
    assert response.status_code == 400 and "at most 2" in response.content.decode()  # never fits
    assert not Document.objects.exists()
    assert page.post(url, {"file": [text_file(corpus)]}).status_code == 302
    api_url = f"/api/v1/collections/{notes.pk}/documents/"
    assert api.post(api_url, {"file": text_file(corpus, "bates.txt")}, format="multipart").status_code == 201
    assert_refused_api(api.post(api_url, {"file": text_file(corpus, "obama.txt")}, format="multipart"))
    assert_refused_page(page.post(url, {"file": [text_file(corpus, "obama.txt")]}))
    assert Document.objects.count() == 2


def test_creating_collections_is_throttled_on_the_page_and_the_api_together(page, api, two_per_minute):
    assert page.post("/collections/", {"name": "one", "visibility": "private"}).status_code == 302
    assert api.post("/api/v1/collections/", {"name": "two"}, format="json").status_code == 201
    assert_refused_page(page.post("/collections/", {"name": "three", "visibility": "private"}))
    assert_refused_api(api.post("/api/v1/collections/", {"name": "four"}, format="json"))
    assert sorted(Collection.objects.values_list("name", flat=True)) == ["one", "two"]


def test_reindex_and_retry_share_the_write_rate(page, api, alice, corpus, two_per_minute):
    notes = collection_create(name="notes", owner=alice)
    document = document_upload(
        collection=notes,
        upload=DocumentUpload(
            filename="gravity_hill.md", data=(corpus / "text" / "gravity_hill.md").read_bytes()
        ),
    ).document
    reindex = f"/api/v1/documents/{document.pk}/reindex/"
    assert api.post(reindex, {}, format="json").status_code == 202
    assert api.post(reindex, {}, format="json").status_code == 202
    assert_refused_api(api.post(reindex, {}, format="json"))
    assert_refused_api(api.post(f"/api/v1/documents/{document.pk}/retry/", format="json"))
    assert_refused_page(page.post(f"/documents/{document.pk}/retry/"))


def test_the_mcp_reindex_tool_counts_with_the_api_writes(
    api, alice, two_per_minute, no_persistent_connections
):
    notes = collection_create(name="notes", owner=alice)
    assert api.post("/api/v1/collections/", {"name": "one"}, format="json").status_code == 201
    assert api.post("/api/v1/collections/", {"name": "two"}, format="json").status_code == 201
    server = build_server(NamedUserIdentity(user_id=alice.pk))

    async def scenario():
        async with Client(server) as client:
            return await client.call_tool("reindex_collection", {"collection": notes.pk})

    refused = run(scenario)
    assert refused.is_error
    assert refused.structured_content["error"]["status"] == 429


def test_subscribing_and_unsubscribing_share_the_write_rate_on_the_page_and_the_api(
    page, api, alice, bob, two_per_minute
):
    """Each subscription change writes an audit record that is never deleted: a loop of them is refused."""
    listed = collection_update(collection=collection_create(name="bob's notes", owner=bob), listed=True)
    api_url, page_url = f"/api/v1/collections/{listed.pk}/subscribe/", f"/marketplace/{listed.pk}/"
    assert api.post(api_url).status_code == 201
    assert page.post(page_url + "unsubscribe/").status_code == 302
    assert_refused_api(api.post(api_url))
    assert_refused_page(page.post(page_url + "subscribe/"))
    assert_refused_api(api.delete(api_url))
    assert_refused_page(page.post(page_url + "unsubscribe/"))
    assert Subscription.objects.get(user=alice, collection=listed).is_active is False
    recorded = AuditEvent.objects.filter(action__startswith="subscription.").values_list("action", flat=True)
    assert sorted(recorded) == ["subscription.created", "subscription.ended"]


def test_creating_profiles_shares_the_write_rate(page, api, two_per_minute):
    fields = {"name": "mine", "tag": "mine"}
    assert page.post("/profiles/", fields).status_code == 302
    assert api.post("/api/v1/profiles/", {"name": "two", "tag": "two"}, format="json").status_code == 201
    assert_refused_page(page.post("/profiles/", {"name": "three", "tag": "three"}))
    assert_refused_api(api.post("/api/v1/profiles/", {"name": "four", "tag": "four"}, format="json"))


def test_questions_on_the_chat_page_and_searches_on_the_collection_page_share_the_api_rate(
    page, api, alice, corpus, two_per_minute
):
    notes = collection_create(name="notes", owner=alice)
    document_upload(
        collection=notes,
        upload=DocumentUpload(
            filename="gravity_hill.md", data=(corpus / "text" / "gravity_hill.md").read_bytes()
        ),
    )
    question = {"question": "Why does a car seem to roll uphill?", "collections": [notes.pk]}
    asked = page.post("/chat/ask/", question, HTTP_ACCEPT="text/event-stream")
    assert asked.status_code == 200 and b"final_answer" in b"".join(asked.streaming_content)
    assert (
        api.post(
            "/api/v1/retrieve/", {"question": "gravity hill", "collections": [notes.pk]}, format="json"
        ).status_code
        == 200
    )
    # The third question of the minute, on any path, is refused with the wait.
    refused = page.post("/chat/ask/", question, HTTP_ACCEPT="text/event-stream")
    assert refused.status_code == 429 and "too many questions and searches" in refused.json()["error"]
    assert int(refused["Retry-After"]) > 0
    assert_refused_page(page.get(f"/collections/{notes.pk}/", {"q": "gravity hill"}))
    assert_refused_api(
        api.post("/api/v1/retrieve/", {"question": "gravity hill", "collections": [notes.pk]}, format="json")
    )
    # Without a search the collection page is not a question: it still opens.
    assert page.get(f"/collections/{notes.pk}/").status_code == 200
