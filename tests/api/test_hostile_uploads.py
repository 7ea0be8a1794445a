"""Hostile uploads through the API: refused with a 4xx, or processed into `failed` with the reason."""

from __future__ import annotations

import dataclasses

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Chunk
from tests.api.conftest import assert_error
from tests.ingestion import hostile_files as hostile

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]


def _post(client, collection, filename: str, data: bytes):
    url = f"/api/v1/collections/{collection.pk}/documents/"
    return client.post(url, {"file": SimpleUploadedFile(filename, data)}, format="multipart")


@pytest.mark.parametrize(
    ("filename", "make", "reason"),
    [
        ("deep.json", lambda: hostile.deep_json_spec(100_000), "KNOWLEDGE_MAX_NESTING_DEPTH"),
        ("deep.yaml", lambda: hostile.deep_yaml_spec(100_000), "KNOWLEDGE_MAX_NESTING_DEPTH"),
        ("laughs.yaml", hostile.yaml_alias_bomb, "KNOWLEDGE_MAX_YAML_ALIAS_EXPANSION"),
        (
            "numbers.xlsx",
            lambda: hostile.office_bomb(
                hostile.marked_xlsx_shared_strings(), "xl/sharedStrings.xml", 1 << 30
            ),
            "KNOWLEDGE_MAX_COMPRESSION_RATIO",
        ),
    ],
)
def test_amplifying_uploads_are_refused_with_a_400(bearer, alice, world, filename, make, reason):
    response = _post(bearer(alice), world["private"], filename, make())
    error = assert_error(response, 400)
    assert reason in error["message"] and filename in error["message"], error
    assert not world["private"].documents.exists()


def test_a_pdf_listing_one_page_twenty_thousand_times_ends_failed_with_the_reason(
    bearer, alice, world, corpus
):
    pdf = hostile.pdf_with_one_page_repeated((corpus / "pdf" / "pasa.pdf").read_bytes(), 20_000)
    client = bearer(alice)
    response = _post(client, world["private"], "pages.pdf", pdf)  # processed at once in the tests
    assert response.status_code == 201, response.content
    document = client.get(f"/api/v1/documents/{response.json()['id']}/").json()
    assert document["status"] == "failed"
    assert "the PDF has 20,000 pages" in document["error"]
    assert "KNOWLEDGE_MAX_PDF_PAGES" in document["error"]
    assert not Chunk.objects.filter(document_id=document["id"]).exists()


def test_too_many_chunks_ends_failed_with_the_reason(bearer, alice, world, settings):
    settings.KNOWLEDGE_INGEST_LIMITS = dataclasses.replace(settings.KNOWLEDGE_INGEST_LIMITS, max_chunks=3)
    text = "".join(f"# Part {n}\n\nThe text of part {n}.\n\n" for n in range(10)).encode()
    client = bearer(alice)
    response = _post(client, world["private"], "parts.md", text)
    assert response.status_code == 201, response.content
    document = client.get(f"/api/v1/documents/{response.json()['id']}/").json()
    assert document["status"] == "failed"
    assert "chunks" in document["error"] and "KNOWLEDGE_MAX_CHUNKS" in document["error"]
