"""Document summaries: made at ingestion (extracted, or by the LLM), shown, and made again on re-index."""

from __future__ import annotations

import pytest

from knowledge.models import Document, DocumentSummary
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_reindex, document_upload
from knowledge.synthesis.extractive import normalise
from tests.agents.script import AgentModel
from tests.conftest import CORPUS
from tests.synthesis.openai_server import Reply

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db


def test_every_ingested_document_has_an_extracted_summary(kb):
    gravity = DocumentSummary.objects.get(document=kb.documents["gravity_hill.md"])
    assert gravity.method == "extractive" and gravity.model == "" and gravity.note == ""
    assert gravity.document_type == "Markdown document"
    assert gravity.key_topics == ["Gravity hill"]
    # Its title is its file name ("Gravity hill"): no "gravity_hill. " before the document's own words.
    assert gravity.summary.startswith("A gravity hill, also known as a magnetic hill")
    # Extracted sentences are the document's own (markup reduced to words).
    source = normalise((CORPUS / "text/gravity_hill.md").read_text())
    assert "making a slight downhill slope appear to be an uphill slope" in source
    assert "making a slight downhill slope appear to be an uphill slope" in gravity.summary
    flag = DocumentSummary.objects.get(document=kb.documents["flag_day.html"])
    assert flag.document_type == "Web page" and "February 15" in flag.summary
    assert DocumentSummary.objects.get(document=kb.documents["dummy.pptx"]).document_type == "Slide deck"
    assert len(flag.embedding) == 384


@pytest.fixture
def upload(alice, django_capture_on_commit_callbacks):
    """Upload into a fresh collection and process at once (the task runs when the upload commits)."""
    collection = collection_create(name="summaries", owner=alice)

    def upload(relative="text/bates.txt"):
        path = CORPUS / relative
        with django_capture_on_commit_callbacks(execute=True):
            document = document_upload(
                collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
            ).document
        document.refresh_from_db()
        assert document.status == Document.Status.READY, document.error
        return document

    return upload


def test_with_an_llm_the_llm_writes_the_summary(upload, llm_env):
    llm_env.responder = AgentModel()
    document = upload()
    summary = document.summary
    assert (summary.method, summary.model, summary.document_type) == (
        "llm",
        "test-model",
        "Encyclopedia article",
    )
    assert summary.key_topics == ["gravity hill", "optical illusion"]
    request = llm_env.requests[0]
    assert "bates.txt" in request.messages[1]["content"] and "Excerpts:" in request.messages[1]["content"]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(text="This document is about many things."),
        Reply(text='{"document_type": "Report", "summary": "", "key_topics": ["a"], "use_for": "b"}'),
        Reply(text='{"document_type": "Report", "summary": "x", "key_topics": 7, "use_for": "b"}'),
        Reply(status=500),
    ],
)
def test_an_unusable_llm_summary_is_extracted_instead_and_never_fails_the_document(upload, llm_env, reply):
    llm_env.script(reply, reply)
    document = upload()
    assert document.summary.method == "extractive"
    assert "extracted instead" in document.summary.note


def test_reindexing_makes_the_summary_again(upload, llm_env, monkeypatch, django_capture_on_commit_callbacks):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL"):
        monkeypatch.delenv(name)
    document = upload("text/gravity_hill.md")
    assert document.summary.method == "extractive"
    monkeypatch.setenv("OPENAI_BASE_URL", llm_env.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("LLM_MODEL", "test-model")
    llm_env.responder = AgentModel()
    with django_capture_on_commit_callbacks(execute=True):
        document_reindex(document=document, sync=True)
    assert DocumentSummary.objects.get(document=document).method == "llm"
    assert DocumentSummary.objects.filter(document=document).count() == 1


def test_the_document_page_and_the_api_show_the_summary(kb, client):
    document = kb.documents["flag_day.html"]
    client.force_login(kb.user)
    page = client.get(f"/documents/{document.pk}/view/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="summary"' in html and "Web page" in html and "Summary extracted from the document" in html
    body = client.get(f"/api/v1/documents/{document.pk}/").json()
    assert body["summary"]["document_type"] == "Web page"
    assert body["summary"]["method"] == "extractive"
    listed = client.get(f"/api/v1/collections/{kb.collection.pk}/documents/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert all(row["summary"]["summary"] for row in rows)


def test_another_users_summary_is_not_visible(kb, client, charlie):
    document = kb.documents["flag_day.html"]
    client.force_login(charlie)
    assert client.get(f"/documents/{document.pk}/view/").status_code == 404
    assert client.get(f"/api/v1/documents/{document.pk}/").status_code == 404


@pytest.mark.parametrize(
    ("relative", "opening"),
    [
        # A paper: its abstract, not its most "central" sentences.
        ("pdf/pasa.pdf", "We introduce PaSa, an advanced Paper Search agent powered by large language"),
        # An API spec whose operations are described in Latin filler: its shape, no filler.
        ("openapi/petstore-expanded-3.0.json", "An API of 4 operations: GET /pets, POST /pets"),
    ],
)
def test_an_extracted_summary_says_what_the_document_is(upload, relative, opening):
    summary = DocumentSummary.objects.get(document=upload(relative))
    assert opening in summary.summary, summary.summary
    assert "lorem" not in summary.summary.lower() and "dolor sit" not in summary.summary.lower()


def test_lorem_ipsum_is_recognised_and_english_is_not():
    from knowledge.ingestion.summary import is_placeholder

    assert is_placeholder("Curabitur odio lorem, ornare eget elementum nec, cursus id lectus.")
    assert not is_placeholder("A gravity hill is a place where the land produces an illusion of slope.")
    assert not is_placeholder("Nulla is a Latin word some English texts quote once.")
