"""Thin django-q2 task wrappers. Tasks take ids and are safe to run twice.

They are queued by knowledge.processing_jobs (``job_enqueue``) under their
dotted names, so the services never import this module.
"""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django_q.models import Schedule

from config.base.errors import KnowledgeError
from knowledge.evaluation.gate import release_gate_run
from knowledge.evaluation.store import eval_run_collection
from knowledge.ingestion.pipeline import document_process
from knowledge.models import Collection, Document, EvalSet, Release, Source
from knowledge.processing_jobs import job_claim, job_claim_next
from knowledge.services.documents import documents_fail_stale
from knowledge.services.releases import release_hold
from knowledge.services.sources import schedule_name, source_sync_queued, sync_report
from knowledge.worker_probes import probe_answer

logger = logging.getLogger(__name__)


def process_document(
    document_id: int, chunk_profile_id: int | None = None, job_id: int | None = None, fair: bool = True
) -> None:
    """Process one document; with a job id, the queued job this run claims (processing_jobs): the
    fairest queued one in a worker, its own when run inline (``fair`` False) for a caller that waits.

    Tasks queued without a job id (before jobs existed, or called directly) process unconditionally.
    """
    claim = None
    if job_id is not None:
        claim = job_claim_next(job_id=job_id) if fair else job_claim(job_id=job_id)
        if claim is None:
            logger.info("Job %s for document %s is taken, done or gone; nothing to do", job_id, document_id)
            return
        document_id, chunk_profile_id = claim.document_id, claim.chunk_profile_id
    # A worker that died before this one left its documents `processing`; say so now.
    documents_fail_stale(documents=Document.objects.all())
    document_process(document_id=document_id, chunk_profile_id=chunk_profile_id, claim=claim)


def worker_probe(cluster: str, sent_at: str) -> None:
    """The round trip that proves a cluster takes queued tasks (knowledge.worker_probes)."""
    probe_answer(cluster=cluster, sent_at=sent_at)


def run_evaluation(eval_set_id: int, collection_id: int, k: int, user_id: int | None) -> int:
    """One evaluation run started from the admin; returns the recorded run's id. A set or collection
    deleted meanwhile fails the task with that reason (django-q keeps it under failed tasks)."""
    eval_set = EvalSet.objects.get(pk=eval_set_id)
    collection = Collection.objects.select_related("owner").get(pk=collection_id)
    created_by = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    run = eval_run_collection(eval_set=eval_set, collection=collection, k=k, created_by=created_by)
    logger.info("Evaluation run %s recorded: %s on %s", run.pk, eval_set.name, collection.name)
    return run.pk


def sync_source(source_id: int, trigger: str = "schedule", ticket: str = "") -> int | None:
    """One sync of a source (knowledge.services.sources), from the schedule or a "Sync now" (its
    ``ticket``); returns the sync's id. A source deleted meanwhile is nothing to do; one syncing
    already is left to it; a ticket that has run already (a task delivered twice) too."""
    source = Source.objects.select_related("collection").filter(pk=source_id).first()
    if source is None:  # deleted with its collection: its schedule goes too
        logger.info("Source %s is gone; nothing to sync", source_id)
        Schedule.objects.filter(name=schedule_name(source_id)).delete()
        return None
    try:
        run = source_sync_queued(source=source, trigger=trigger, ticket=ticket)
    except KnowledgeError as exc:
        logger.info("Source %s not synced: %s", source_id, exc)
        return None
    logger.info("Source %s synced (%s): %s", source_id, run.status, sync_report(run))
    return run.pk


def release_gate(release_id: int) -> str:
    """Measure a built release against the serving one and promote or hold it (knowledge.evaluation.gate).
    Returns its state; a release discarded or decided meanwhile is left as it is. A gate that fails
    holds the release with the reason (an operator decides), and the task fails with the error."""
    try:
        release = release_gate_run(release_id=release_id)
    except Exception as exc:
        logger.exception("The gate of release %s failed", release_id)
        candidate = Release.objects.filter(pk=release_id, state=Release.State.CANDIDATE).first()
        if candidate is not None:
            release_hold(release=candidate, reason=f"the gate failed: {exc}"[:1000])
        raise
    logger.info("Release %s of collection %s: %s", release.pk, release.collection_id, release.state)
    return release.state
