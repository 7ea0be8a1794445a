"""The server-rendered collection and upload pages (Django test client)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Collection, Document
from knowledge.services.collections import collection_create
from tests.releases.helpers import held_promoted

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


def test_pages_require_login(client, alice):
    collection = collection_create(name="private", owner=alice)
    for url in ["/collections/", f"/collections/{collection.pk}/"]:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_signup_then_create_collection(client):
    response = client.post(
        "/accounts/signup/",
        {
            "username": "dora",
            "email": "dora@example.com",
            "password1": "a-Long-pass-123",
            "password2": "a-Long-pass-123",
        },
    )
    assert response.status_code == 302
    response = client.post("/collections/", {"name": "Handbook", "visibility": "private"})
    collection = Collection.objects.get(name="Handbook")
    assert collection.owner.username == "dora"
    assert response["Location"] == f"/collections/{collection.pk}/"
    assert b"Handbook" in client.get("/collections/").content


def test_multi_file_upload_reports_each_file_and_processes(alice_client, alice, corpus):
    collection = collection_create(name="mine", owner=alice)
    files = [
        SimpleUploadedFile("dummy.docx", (corpus / "office" / "dummy.docx").read_bytes()),
        SimpleUploadedFile("gravity_hill.md", (corpus / "text" / "gravity_hill.md").read_bytes()),
        SimpleUploadedFile("empty.txt", b""),
    ]
    response = alice_client.post(
        f"/collections/{collection.pk}/upload/", {"file": files}, HTTP_ACCEPT="application/json"
    )
    body = response.json()
    assert response.status_code == 200
    assert sorted(d["filename"] for d in body["documents"]) == ["dummy.docx", "gravity_hill.md"]
    assert body["errors"] == ["empty.txt: the file is empty"]

    status = alice_client.get(f"/collections/{collection.pk}/documents.json").json()["documents"]
    assert {d["filename"]: (d["status"], d["percent"]) for d in status} == {
        "dummy.docx": ("ready", 100),
        "gravity_hill.md": ("ready", 100),
    }
    page = alice_client.get(f"/collections/{collection.pk}/").content.decode()
    assert "gravity_hill.md" in page and "Ready" in page


def test_single_bad_file_gets_a_clear_4xx(alice_client, alice):
    collection = collection_create(name="mine", owner=alice)
    response = alice_client.post(
        f"/collections/{collection.pk}/upload/",
        {"file": SimpleUploadedFile("logo.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00" + bytes(range(256)))},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 415
    assert "unsupported file type" in response.json()["error"]
    response = alice_client.post(f"/collections/{collection.pk}/upload/", {}, HTTP_ACCEPT="application/json")
    assert response.status_code == 400


def test_oversized_upload_is_refused_before_reading(alice_client, alice, settings):
    settings.KNOWLEDGE_MAX_UPLOAD_BYTES = 2048
    collection = collection_create(name="mine", owner=alice)
    response = alice_client.post(
        f"/collections/{collection.pk}/upload/",
        {"file": SimpleUploadedFile("big.txt", b"words " * 1000)},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 413
    assert not Document.objects.exists()


def test_other_users_cannot_see_or_change_a_private_collection(client, alice, charlie, corpus):
    private = collection_create(name="secret", owner=alice)
    public = collection_create(name="shared", owner=alice, visibility="public")
    client.force_login(charlie)
    assert client.get(f"/collections/{private.pk}/").status_code == 404
    assert client.get(f"/collections/{private.pk}/documents.json").status_code == 404
    assert b"secret" not in client.get("/collections/").content
    upload = SimpleUploadedFile("dummy.docx", (corpus / "office" / "dummy.docx").read_bytes())
    assert client.post(f"/collections/{private.pk}/upload/", {"file": upload}).status_code == 404
    assert client.get(f"/collections/{public.pk}/").status_code == 200
    upload.seek(0)
    response = client.post(
        f"/collections/{public.pk}/upload/", {"file": upload}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 403
    assert not Document.objects.exists()


def test_retry_and_delete_from_the_page(alice_client, alice, charlie):
    from django.test import Client

    other = Client()
    collection = collection_create(name="mine", owner=alice)
    alice_client.post(
        f"/collections/{collection.pk}/upload/",
        {"file": SimpleUploadedFile("report.docx", b"not a zip")},
        HTTP_ACCEPT="application/json",
    )
    document = Document.objects.get()
    assert document.status == Document.Status.FAILED
    assert b"not a valid DOCX" in alice_client.get(f"/collections/{collection.pk}/").content
    assert alice_client.post(f"/documents/{document.pk}/retry/").status_code == 302

    other.force_login(charlie)
    assert other.post(f"/documents/{document.pk}/delete/").status_code == 404
    assert Document.objects.filter(pk=document.pk).exists()
    assert alice_client.post(f"/documents/{document.pk}/delete/").status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()


def test_owner_changes_visibility_reindexes_and_deletes_from_the_page(alice_client, alice, charlie, corpus):
    from django.test import Client

    from knowledge.models import Chunk, ChunkProfile

    collection = collection_create(name="mine", owner=alice)
    alice_client.post(
        f"/collections/{collection.pk}/upload/",
        {"file": SimpleUploadedFile("gravity_hill.md", (corpus / "text" / "gravity_hill.md").read_bytes())},
    )
    url = f"/collections/{collection.pk}/settings/"
    other = Client()
    other.force_login(charlie)
    assert other.post(url, {"action": "delete"}).status_code == 404

    assert alice_client.post(url, {"action": "visibility", "visibility": "public"}).status_code == 302
    collection.refresh_from_db()
    assert collection.visibility == "public"
    assert other.post(url, {"action": "delete"}).status_code == 403  # readable now, still not his
    assert alice_client.post(url, {"action": "visibility", "visibility": "secret"}).status_code == 400

    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)
    assert alice_client.post(url, {"action": "reindex", "chunk_profile": small.pk}).status_code == 302
    collection.refresh_from_db()
    assert collection.chunk_profile != small  # built, then held: the gate had no questions
    held_promoted(collection)
    assert collection.chunk_profile == small
    assert Chunk.objects.filter(collection=collection, chunk_profile=small).exists()

    assert alice_client.post(url, {"action": "delete"}).status_code == 302
    assert not Collection.objects.filter(pk=collection.pk).exists()
