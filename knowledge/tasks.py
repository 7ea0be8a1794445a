"""Thin django-q2 task wrappers. Tasks take ids and are safe to run twice."""

from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)

PROCESS_DOCUMENT = "knowledge.tasks.process_document"


def process_document(document_id: int, chunk_profile_id: int | None = None) -> None:
    from knowledge.ingestion.pipeline import document_process

    document_process(document_id=document_id, chunk_profile_id=chunk_profile_id)


def enqueue_document_processing(
    *, document_id: int, chunk_profile_id: int | None = None, sync: bool | None = None
) -> None:
    """Queue processing once the surrounding transaction commits (the row must be visible)."""
    from django_q.tasks import async_task

    def enqueue() -> None:
        options = {"task_name": f"document-{document_id}", "group": "ingest"}
        if sync is not None:
            options["sync"] = sync
        async_task(PROCESS_DOCUMENT, document_id, chunk_profile_id, q_options=options)

    transaction.on_commit(enqueue)
