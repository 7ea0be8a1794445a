"""Thin django-q2 task wrappers. Tasks take ids and are safe to run twice.

They are queued by knowledge.documents (``enqueue_document_processing``) under
their dotted names, so the services never import this module.
"""

from __future__ import annotations

from knowledge.documents import documents_fail_stale
from knowledge.ingestion.pipeline import document_process
from knowledge.models import Document


def process_document(document_id: int, chunk_profile_id: int | None = None) -> None:
    # A worker that died before this one left its documents `processing`; say so now.
    documents_fail_stale(documents=Document.objects.all())
    document_process(document_id=document_id, chunk_profile_id=chunk_profile_id)
