"""The original-file endpoint never lets an upload run script on our origin.

Hostile files arrive through every upload path (collection page, API, admin)
with a client-declared content type chosen to make a browser execute them. The
server types each file from the content it detected; everything but a real PDF
opened by the citation viewer is served as a sandboxed attachment.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from knowledge.models import Document
from knowledge.services.collections import collection_create
from tests.conftest import CORPUS

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

HTML = (
    b"<!doctype html><html><body><h1>Notes</h1><p>Quarterly notes.</p>"
    b"<script>alert('xss')</script></body></html>"
)
MARKDOWN = b"# Page\n\nSome notes.\n\n<script>alert('xss')</script>\n"
SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(\'xss\')">'
    b"<script>alert('xss')</script><text>hello</text></svg>"
)
FAKE_PDF = b"<html><body><p>Not a PDF at all.</p><script>alert('xss')</script></body></html>"
EXTENSIONLESS = b"<html><body><p>Release notes.</p><script>alert('xss')</script></body></html>"

# What each hostile upload is served as: the type the server detected, never the declared one.
EXPECTED_TYPES = {
    "evil.html": "text/html",
    "page.md": "text/markdown",
    "pic.txt": "text/plain",
    "notes": "text/html",
    "fake.pdf": "application/pdf",
}


def _page_upload(client, collection, name: str, data: bytes, declared: str) -> Document:
    upload = SimpleUploadedFile(name, data, content_type=declared)
    response = client.post(
        f"/collections/{collection.pk}/upload/", {"file": upload}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 200, response.content
    return Document.objects.get(pk=response.json()["documents"][0]["id"])


def _api_upload(user, collection, name: str, data: bytes, declared: str) -> Document:
    _, secret = token_create(user=user, name="uploads")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    upload = SimpleUploadedFile(name, data, content_type=declared)
    response = api.post(
        f"/api/v1/collections/{collection.pk}/documents/", {"file": upload}, format="multipart"
    )
    assert response.status_code == 201, response.content
    return Document.objects.get(pk=response.json()["id"])


def _admin_upload(client, collection, name: str, data: bytes, declared: str) -> Document:
    upload = SimpleUploadedFile(name, data, content_type=declared)
    response = client.post(
        "/admin/knowledge/document/add/",
        {"collection": collection.pk, "upload": upload, "title": "", "tags": ""},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    return Document.objects.get(collection=collection, filename=name)


@pytest.fixture
def hostile_documents(client, bob, django_user_model):
    """Bob's hostile uploads into a public collection, one per upload path."""
    collection = collection_create(name="Public notes", owner=bob, visibility="public")
    client.force_login(bob)
    documents = [
        _page_upload(client, collection, "evil.html", HTML, "text/html"),
        _page_upload(client, collection, "page.md", MARKDOWN, "text/html"),
        _page_upload(client, collection, "pic.txt", SVG, "image/svg+xml"),
        _api_upload(bob, collection, "notes", EXTENSIONLESS, "text/html"),
    ]
    operator = django_user_model.objects.create_superuser("operator", "op@example.com", "pw-operator")
    client.force_login(operator)
    documents.append(_admin_upload(client, collection, "fake.pdf", FAKE_PDF, "text/html"))
    return documents


def _assert_sandboxed_attachment(response, expected_type: str) -> None:
    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == expected_type
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    policy = response["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "sandbox" in policy


def test_hostile_uploads_are_typed_by_content_and_served_as_sandboxed_attachments(
    client, alice, hostile_documents
):
    client.force_login(alice)
    for document in hostile_documents:
        expected = EXPECTED_TYPES[document.filename]
        assert document.content_type == expected, document.filename
        for query in ("", "?inline=1"):  # the viewer's inline request is for real PDFs only
            response = client.get(f"/documents/{document.pk}/file/{query}")
            _assert_sandboxed_attachment(response, expected)


def test_a_real_pdf_is_a_sandboxed_download_that_the_viewer_draws(client, alice):
    collection = collection_create(name="Papers", owner=alice)
    client.force_login(alice)
    pdf = (CORPUS / "pdf" / "paper.pdf").read_bytes()
    document = _page_upload(client, collection, "paper.pdf", pdf, "text/html")
    assert document.content_type == "application/pdf"

    for query in ("", "?inline=1"):  # no PDF opens as a page of ours, whatever the link asks
        download = client.get(f"/documents/{document.pk}/file/{query}")
        _assert_sandboxed_attachment(download, "application/pdf")
    view = client.get(f"/documents/{document.pk}/view/").content.decode()
    assert f'"file": "/documents/{document.pk}/file/"' in view and "<iframe" not in view


def test_the_reader_asks_for_the_same_original_again_without_downloading_it(client, alice, bob):
    """An ETag lets the reader reopen a PDF at another citation without its bytes; every use still
    asks the server, so a reader who lost access is refused rather than served from a cache."""
    collection = collection_create(name="Papers", owner=alice)
    client.force_login(alice)
    pdf = (CORPUS / "pdf" / "pasa.pdf").read_bytes()
    document = _page_upload(client, collection, "pasa.pdf", pdf, "application/pdf")
    first = client.get(f"/documents/{document.pk}/file/")
    etag = first["ETag"]
    assert etag == f'"{document.content_hash}"' and first["Cache-Control"] == "private, no-cache"
    again = client.get(f"/documents/{document.pk}/file/", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and not again.content
    assert again["X-Content-Type-Options"] == "nosniff" and again["Content-Security-Policy"]
    changed = client.get(f"/documents/{document.pk}/file/", HTTP_IF_NONE_MATCH='"another"')
    assert changed.status_code == 200 and b"".join(changed.streaming_content) == pdf
    client.force_login(bob)
    assert client.get(f"/documents/{document.pk}/file/", HTTP_IF_NONE_MATCH=etag).status_code == 404
