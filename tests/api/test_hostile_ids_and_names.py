"""Ids that are not ASCII digits, names longer than a file system allows, text that is not Unicode.

Each of these was a server error: ``"²".isdigit()`` is true but ``int("²")``
raises; a name of 100 CJK characters is 300 bytes, over the 255 a file name
may have (ENAMETOOLONG); a lone surrogate (``"\\ud800"``, legal in a JSON
string) cannot be stored in jsonb or text. Now each is a 400 or a 404 with a
message, and nothing already stored is lost. Clients here do not re-raise
server errors, so a 500 is seen as a response.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Document, Profile
from knowledge.services.documents import DocumentUpload, document_upload
from tests.api.conftest import assert_error

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

CJK_NAME = "知" * 100 + ".txt"  # 104 characters, 304 bytes in UTF-8
TEXT = b"Parental leave is requested through the HR office two months ahead."


@pytest.fixture
def document(world, alice):
    result = document_upload(
        collection=world["private"], sync=True, upload=DocumentUpload(filename="leave.txt", data=TEXT)
    )
    return result.document


def test_a_name_of_a_hundred_cjk_characters_uploads_through_the_api(api, world):
    url = f"/api/v1/collections/{world['private'].pk}/documents/"
    response = api.post(url, {"file": SimpleUploadedFile(CJK_NAME, TEXT)}, format="multipart")
    assert response.status_code == 201, response.content[:500]
    stored = Document.objects.get(pk=response.json()["id"])
    assert stored.filename == CJK_NAME
    with stored.file.open("rb") as handle:
        assert handle.read() == TEXT


def test_a_name_of_a_hundred_cjk_characters_uploads_through_the_page(page, world):
    url = f"/collections/{world['private'].pk}/upload/"
    response = page.post(url, {"file": SimpleUploadedFile(CJK_NAME, TEXT)}, HTTP_ACCEPT="application/json")
    assert response.status_code == 200, response.content[:500]
    assert response.json()["errors"] == []
    stored = Document.objects.get(collection=world["private"])
    assert stored.filename == CJK_NAME
    download = page.get(f"/documents/{stored.pk}/file/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == TEXT


def test_an_over_long_name_keeps_its_extension():
    from knowledge.models.documents import document_filename_clean

    name = document_filename_clean("a" * 400 + ".yaml")
    assert len(name) == 255 and name.endswith(".yaml")


@pytest.mark.parametrize("raw", ["²", "١", "-1", "1.0", " 1", "0", str(2**63), "1e3", "٣"])
def test_only_ascii_digits_are_ids(raw):
    from config.base.validation import id_or_none

    assert id_or_none(raw) is None


def test_ids_in_range_are_ids():
    from config.base.validation import id_or_none

    assert id_or_none("42") == 42 and id_or_none(str(2**63 - 1)) == 2**63 - 1


@pytest.mark.parametrize("chunk", ["²", "1²", "-1", "x"])
def test_a_chunk_that_is_not_an_id_is_a_400_in_the_document_view(page, document, chunk):
    response = page.get(f"/documents/{document.pk}/view/", {"chunk": chunk})
    assert response.status_code == 400, response.content[:300]
    assert b"chunk" in response.content


def test_a_chunk_profile_that_is_not_an_id_is_a_400_in_the_collection_settings(page, world, document):
    url = f"/collections/{world['private'].pk}/settings/"
    response = page.post(url, {"action": "reindex", "chunk_profile": "²"})
    assert response.status_code == 400, response.content[:300]
    assert b"chunk profile" in response.content
    assert Document.objects.filter(pk=document.pk).exists()


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "p", "tag": "p", "knowledge_overrides": {"synthesisPromptOverride": "x\\ud800"}}',
        '{"name": "p\\udfff", "tag": "p"}',
        '{"name": "p", "tag": "p", "knowledge_overrides": {"x\\ud800": 1}}',
    ],
    ids=["override-value", "name", "override-key"],
)
def test_a_lone_surrogate_in_a_json_body_is_a_400(api, body):
    response = api.post("/api/v1/profiles/", data=body, content_type="application/json")
    error = assert_error(response, 400)
    assert "surrogate" in json.dumps(error), error
    assert not Profile.objects.filter(name__startswith="p").exists()


def test_a_lone_surrogate_in_a_profile_update_keeps_the_stored_profile(api, alice):
    created = api.post("/api/v1/profiles/", {"name": "kept", "tag": "kept"}, format="json")
    assert created.status_code == 201, created.content
    url = f"/api/v1/profiles/{created.json()['id']}/"
    body = '{"knowledge_overrides": {"synthesisPromptOverride": "\\ud800"}}'
    assert_error(api.patch(url, data=body, content_type="application/json"), 400)
    assert Profile.objects.get(pk=created.json()["id"]).knowledge_overrides == {}


def test_services_refuse_a_lone_surrogate_in_text_they_store(alice):
    from config.base.errors import KnowledgeError
    from knowledge.services.collections import collection_create

    with pytest.raises(KnowledgeError, match="surrogate"):
        collection_create(name="notes\ud800", owner=alice)


def test_an_evaluation_line_with_a_lone_surrogate_is_an_error_of_that_line():
    from knowledge.evaluation.questions import parse_question

    with pytest.raises(ValueError, match="surrogate"):
        parse_question('{"question": "What?", "expected_sources": [{"document": "a\\udc00.pdf"}]}')


SURROGATE_SPEC = (
    b'{"openapi": "3.0.0", "info": {"title": "t\\ud800", "version": "1"}, '
    b'"paths": {"/x": {"get": {"summary": "s", "responses": {"200": {"description": "ok"}}}}}}'
)


def test_an_openapi_upload_with_a_lone_surrogate_is_a_400(api, world):
    url = f"/api/v1/collections/{world['private'].pk}/documents/"
    response = api.post(url, {"file": SimpleUploadedFile("s.json", SURROGATE_SPEC)}, format="multipart")
    error = assert_error(response, 400)
    assert "surrogate" in error["message"] and "s.json" in error["message"], error
    assert not world["private"].documents.exists()


def test_a_stored_openapi_file_with_a_lone_surrogate_fails_with_the_reason():
    from knowledge.ingestion.extract import extract_sections
    from knowledge.ingestion.types import ExtractionError

    with pytest.raises(ExtractionError, match="surrogate"):
        extract_sections("s.json", SURROGATE_SPEC)
