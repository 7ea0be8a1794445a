"""Thin django-q2 task wrappers. Tasks take ids and are safe to run twice."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def process_document(
    document_id: int, chunk_profile_id: int | None = None, job_id: int | None = None
) -> None:
    """Process one document; with a job id, only if this run wins the job's claim (see processing_jobs).

    Tasks queued without a job id (before jobs existed, or called directly) process unconditionally.
    """
    from knowledge.ingestion.pipeline import document_process
    from knowledge.processing_jobs import job_claim

    claim = None
    if job_id is not None:
        claim = job_claim(job_id=job_id)
        if claim is None:
            logger.info("Job %s for document %s is taken, done or gone; nothing to do", job_id, document_id)
            return
    document_process(document_id=document_id, chunk_profile_id=chunk_profile_id, claim=claim)


def enqueue_document_processing(
    *, document_id: int, chunk_profile_id: int | None = None, sync: bool | None = None
) -> None:
    """Queue processing once the surrounding transaction commits (the row must be visible)."""
    from knowledge.processing_jobs import job_enqueue

    job_enqueue(document_id=document_id, chunk_profile_id=chunk_profile_id, sync=sync)
