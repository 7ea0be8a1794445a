"""Documents through the API: upload (dedup, metadata, refusals), read, list, retry, re-index, delete."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Chunk, ChunkProfile, Document
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db(transaction=True)


def upload(client, collection, path, **fields):
    data = {"file": SimpleUploadedFile(path.name, path.read_bytes()), **fields}
    return client.post(f"/api/v1/collections/{collection.pk}/documents/", data, format="multipart")


def test_upload_processes_then_dedups_with_200(bearer, alice, world, corpus):
    client = bearer(alice)
    path = corpus / "office" / "dummy.docx"
    first = upload(
        client,
        world["private"],
        path,
        title="Dummy",
        author="Someone",
        category="test",
        tags=["a, b", "c"],
        date="2024-05-01",
    )
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["status"] == "ready", body["error"]
    assert body["progress"]["percent"] == 100 and body["progress"]["chunks_done"] == body["chunk_count"] > 0
    assert (body["title"], body["author"], body["category"], body["tags"], body["source_date"]) == (
        "Dummy",
        "Someone",
        "test",
        ["a", "b", "c"],
        "2024-05-01",
    )
    assert body["filename"] == "dummy.docx" and body["collection"] == world["private"].pk
    assert body["size"] == path.stat().st_size and len(body["content_hash"]) == 64
    assert "wordprocessingml" in body["content_type"] and body["processed_at"]

    again = upload(client, world["private"], path, title="Other title")
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert Document.objects.filter(collection=world["private"]).count() == 1

    collection = client.get(f"/api/v1/collections/{world['private'].pk}/").json()
    assert collection["document_count"] == 1 and collection["chunk_count"] == body["chunk_count"]


def test_upload_access(bearer, bob, charlie, world, corpus):
    path = corpus / "text" / "gravity_hill.md"
    assert_error(upload(bearer(charlie), world["private"], path), 404, "not_found")
    assert_error(upload(bearer(bob), world["public"], path), 403, "permission_denied")
    assert_error(upload(bearer(bob), world["admin"], path), 403)
    assert not Document.objects.exists()


def test_upload_refusals_use_the_error_format(bearer, alice, world, settings, corpus):
    client = bearer(alice)
    url = f"/api/v1/collections/{world['private'].pk}/documents/"
    gif = SimpleUploadedFile("logo.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00" + bytes(range(256)))
    assert_error(client.post(url, {"file": gif}, format="multipart"), 415, "unsupported_media_type")
    empty = SimpleUploadedFile("empty.txt", b"")
    assert "empty" in assert_error(client.post(url, {"file": empty}, format="multipart"), 400)["message"]
    assert "file" in assert_error(client.post(url, {"title": "no file"}, format="multipart"), 400)["fields"]
    json_body = client.post(url, {"file": "x"}, format="json")
    assert_error(json_body, 415, "unsupported_media_type")
    bad_date = upload(client, world["private"], corpus / "text" / "gravity_hill.md", date="01/05/2024")
    assert "date" in assert_error(bad_date, 400)["fields"]
    two = [SimpleUploadedFile("a.md", b"# A\n\ntext"), SimpleUploadedFile("b.md", b"# B\n\ntext")]
    assert "file" in assert_error(client.post(url, {"file": two}, format="multipart"), 400)["fields"]

    settings.KNOWLEDGE_MAX_UPLOAD_BYTES = 2048
    too_large = upload(client, world["private"], corpus / "text" / "gravity_hill.md")
    assert "limit" in assert_error(too_large, 413, "too_large")["message"]
    assert not Document.objects.exists()


def test_oversized_body_is_refused_from_content_length(bearer, alice, world, settings):
    settings.KNOWLEDGE_MAX_UPLOAD_BYTES = 1024
    big = SimpleUploadedFile("big.md", b"# Big\n\n" + b"word " * 300_000)
    response = bearer(alice).post(
        f"/api/v1/collections/{world['private'].pk}/documents/", {"file": big}, format="multipart"
    )
    assert_error(response, 413)


def test_reading_documents_follows_collection_access(bearer, alice, bob, charlie, world, corpus):
    private_doc = upload(bearer(alice), world["private"], corpus / "text" / "gravity_hill.md").json()
    public_doc = upload(bearer(alice), world["public"], corpus / "office" / "dummy.docx").json()
    as_charlie = bearer(charlie)

    document_url = f"/api/v1/documents/{private_doc['id']}/"
    for method, url in [
        (as_charlie.get, document_url),
        (as_charlie.post, f"{document_url}retry/"),
        (as_charlie.post, f"{document_url}reindex/"),
        (as_charlie.get, f"/api/v1/collections/{world['private'].pk}/documents/"),
    ]:
        assert_error(method(url), 404)
    assert_error(as_charlie.delete(f"/api/v1/documents/{private_doc['id']}/"), 404)
    assert "gravity" not in as_charlie.get(f"/api/v1/documents/{private_doc['id']}/").content.decode()

    public_url = f"/api/v1/documents/{public_doc['id']}/"
    assert as_charlie.get(public_url).json()["filename"] == "dummy.docx"
    listed = as_charlie.get(f"/api/v1/collections/{world['public'].pk}/documents/").json()
    assert [d["id"] for d in listed["results"]] == [public_doc["id"]]
    as_bob = bearer(bob)
    assert_error(as_bob.delete(public_url), 403)
    assert_error(as_bob.post(f"{public_url}reindex/", {}, format="json"), 403)
    assert_error(as_bob.post(f"{public_url}retry/"), 403)
    assert Document.objects.count() == 2


def test_list_filters_by_status_and_paginates(bearer, alice, world, corpus):
    client = bearer(alice)
    upload(client, world["private"], corpus / "text" / "gravity_hill.md")
    failed = Document.objects.get()
    Document.objects.filter(pk=failed.pk).update(status=Document.Status.FAILED, error="boom")
    upload(client, world["private"], corpus / "office" / "dummy.docx")
    url = f"/api/v1/collections/{world['private'].pk}/documents/"
    everything = client.get(url).json()
    assert everything["count"] == 2
    assert [d["filename"] for d in client.get(url, {"status": "failed"}).json()["results"]] == [
        "gravity_hill.md"
    ]
    assert [d["filename"] for d in client.get(url, {"status": "ready"}).json()["results"]] == ["dummy.docx"]
    assert "status" in assert_error(client.get(url, {"status": "done"}), 400)["fields"]
    assert len(client.get(url, {"page_size": 1}).json()["results"]) == 1


def test_retry_a_failed_document_and_refuse_a_ready_one(bearer, alice, world, corpus):
    client = bearer(alice)
    document = upload(client, world["private"], corpus / "text" / "gravity_hill.md").json()
    refused = client.post(f"/api/v1/documents/{document['id']}/retry/")
    assert "re-index" in assert_error(refused, 400)["message"]

    Document.objects.filter(pk=document["id"]).update(status=Document.Status.FAILED, error="boom")
    retried = client.post(f"/api/v1/documents/{document['id']}/retry/")
    assert retried.status_code == 202
    assert retried.json()["status"] == "ready" and retried.json()["error"] == ""


def test_reindex_one_document_or_the_collection_under_another_profile(bearer, alice, world, corpus):
    client = bearer(alice)
    document = upload(client, world["private"], corpus / "text" / "gravity_hill.md").json()
    url = f"/api/v1/documents/{document['id']}/reindex/"
    same = client.post(url, {}, format="json")
    assert same.status_code == 202
    assert same.json()["chunk_profile"] == "default" and same.json()["queued_documents"] == 1
    assert same.json()["document"]["status"] == "ready"

    ChunkProfile.objects.create(name="small", strategy="fixed", chunk_size=300, chunk_overlap=50)
    switched = client.post(url, {"chunk_profile": "small"}, format="json")
    assert switched.status_code == 202, switched.content
    assert switched.json()["chunk_profile"] == "small" and switched.json()["queued_documents"] == 1
    # The new set is a release: with no question set linked, the gate holds it for the owner.
    release = switched.json()["release"]
    assert release["state"] == "held" and release["chunk_profile"] == "small"
    assert release["reason"].startswith("nothing to measure: ")
    collection = client.get(f"/api/v1/collections/{world['private'].pk}/").json()
    assert collection["chunk_profile"] == "default" and collection["pending_chunk_profile"] == "small"
    assert collection["release"]["id"] == release["id"]
    assert Chunk.objects.filter(document_id=document["id"], chunk_profile__name="small").exists()

    assert "nope" in assert_error(client.post(url, {"chunk_profile": "nope"}, format="json"), 404)["message"]
    assert_error(client.post(url, {"chunk_profile": 5, "extra": 1}, format="json"), 400)


def test_delete_removes_the_document_and_its_chunks(bearer, alice, world, corpus):
    client = bearer(alice)
    document = upload(client, world["private"], corpus / "text" / "gravity_hill.md").json()
    assert Chunk.objects.filter(document_id=document["id"]).exists()
    assert client.delete(f"/api/v1/documents/{document['id']}/").status_code == 204
    assert not Chunk.objects.filter(document_id=document["id"]).exists()
    assert_error(client.get(f"/api/v1/documents/{document['id']}/"), 404)
