"""A test module's collection of real documents, ingested once through the real pipeline."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from django.contrib.auth import get_user_model

from knowledge.models import ChatSession, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_delete, document_upload


@contextmanager
def ingested_collection(*, username: str, name: str, files: Sequence[Path]) -> Iterator[SimpleNamespace]:
    """A new user owning collection ``name`` holding ``files``, every one ready (else the setup
    fails with the document's error); the user, their chats and the documents go afterwards."""
    user = get_user_model().objects.create_user(username, password=f"pw-{username}")
    collection = collection_create(name=name, owner=user)
    documents = []
    try:
        for path in files:
            upload = DocumentUpload(filename=path.name, data=path.read_bytes())
            document = document_upload(collection=collection, upload=upload).document
            document.refresh_from_db()
            documents.append(document)
            assert document.status == Document.Status.READY, document.error
        yield SimpleNamespace(user=user, collection=collection)
    finally:
        ChatSession.objects.filter(user=user).delete()
        for document in documents:
            document_delete(document=document)
        collection.delete()
        user.delete()
