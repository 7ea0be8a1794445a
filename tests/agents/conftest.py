"""A small corpus of four documents, ingested once (summaries extracted: no LLM at ingestion)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model

from knowledge.models import ChatSession, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_delete, document_upload
from tests.conftest import CORPUS

FILES = ("text/gravity_hill.md", "html/flag_day.html", "office/dummy.docx", "office/dummy.pptx")
AGENTIC = {"agentic.enabled": True}


@pytest.fixture(scope="module")
def kb(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        owner = get_user_model().objects.create_user("agent-owner", password="pw-agent-owner")
        collection = collection_create(name="agent corpus", owner=owner)
        documents = {}
        try:
            for relative in FILES:
                path = CORPUS / relative
                uploaded = document_upload(
                    collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
                )
                document = uploaded.document
                document.refresh_from_db()
                assert document.status == Document.Status.READY, document.error
                documents[path.name] = document
            yield SimpleNamespace(user=owner, collection=collection, documents=documents)
        finally:
            # Also when ingestion failed: the next module makes the same user and collection.
            ChatSession.objects.filter(user=owner).delete()
            for document in documents.values():
                document_delete(document=document)
            collection.delete()
            owner.delete()
