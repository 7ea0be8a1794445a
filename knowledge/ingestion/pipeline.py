"""The document pipeline: the only code that writes chunks.

extract (pure) -> chunk (pure) -> embed -> summarise -> one transaction that
replaces the document's chunk set for the chunk profile and its summary. Running it twice, or again after a
worker died half-way, leaves exactly one complete chunk set: nothing is written
until the last step, and that step deletes and inserts atomically.

Every progress write doubles as a heartbeat (``updated_at``), and a thread
beats while a long step (extraction, an LLM summary) writes nothing, so a
``processing`` document that stops beating belongs to a dead worker
(``knowledge.documents.documents_fail_stale``). A progress write that finds
the row gone means the document was deleted: the run stops there and writes
nothing more.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from knowledge.clients.embedding import MAX_CONTENT_TOKENS, count_tokens, embed_texts
from knowledge.ingestion.chunking import chunk_sections
from knowledge.ingestion.extract import extract_sections
from knowledge.ingestion.headers import embedding_text, section_header, title_from_filename
from knowledge.ingestion.limits import LimitExceeded
from knowledge.ingestion.summary import SummaryDraft, summary_draft
from knowledge.ingestion.titles import document_title
from knowledge.ingestion.types import ChunkDraft, ExtractionError
from knowledge.models import Chunk, ChunkProfile, Collection, Document, DocumentSummary
from knowledge.processing_jobs import Claim, job_beat, job_finish

logger = logging.getLogger(__name__)

_WRITE_BATCH = 500
# A header never takes a chunk's budget below this many tokens (headers are capped well under it).
MIN_CONTENT_TOKENS = 128
_PROGRESS_INTERVAL_S = 0.5


class DocumentGone(Exception):
    """The document was deleted while it was being processed."""


class ClaimLost(Exception):
    """The run's job was given to another run (this one was taken for dead); it must write nothing."""


def document_process(
    *, document_id: int, chunk_profile_id: int | None = None, claim: Claim | None = None
) -> None:
    """Process one document; with a ``claim``, write only while the run still owns its job."""
    document = Document.objects.select_related("collection").filter(pk=document_id).first()
    if document is None:
        logger.info("Document %s no longer exists; nothing to process", document_id)
        return
    profile = ChunkProfile.objects.get(pk=chunk_profile_id or document.collection.chunk_profile_id)
    try:
        with _heartbeat(document.pk, claim):
            _process(document, profile, claim)
    except ClaimLost:
        logger.warning("Document %s: this run's job was handed to another run; wrote nothing", document_id)
    except DocumentGone:
        logger.info(
            "Document %s was deleted while processing; stopped after %s of %s chunks, writing nothing",
            document_id,
            document.chunks_done,
            document.chunks_total,
        )


def _process(document: Document, profile: ChunkProfile, claim: Claim | None) -> None:
    _update(
        document,
        status=Document.Status.PROCESSING,
        error="",
        sections_total=0,
        sections_done=0,
        chunks_total=0,
        chunks_done=0,
    )
    try:
        drafts = document_chunk_drafts(document, profile)
        vectors = _embed_with_progress(document, drafts)
        summary = _summarise(document, drafts, vectors)
        _write_chunks(document, profile, drafts, vectors, summary, claim)
    except ExtractionError as exc:
        _fail(document, claim, str(exc))
    except (DocumentGone, ClaimLost):
        raise
    except Exception as exc:
        logger.exception("Processing document %s failed", document.pk)
        _fail(document, claim, f"processing failed: {exc}")
        raise


def _fail(document: Document, claim: Claim | None, error: str) -> None:
    """The document failed, unless the run lost its job to another run (then that run decides)."""
    with transaction.atomic():
        if claim is not None and not job_finish(claim=claim, failed=True):
            raise ClaimLost(document.pk)
        _update(document, status=Document.Status.FAILED, error=error)


def document_chunk_drafts(document: Document, profile: ChunkProfile) -> list[ChunkDraft]:
    """Extract and chunk the stored original (pure steps; nothing is written but progress)."""
    with document.file.open("rb") as handle:
        data = handle.read()
    limits = settings.KNOWLEDGE_INGEST_LIMITS
    sections = extract_sections(document.filename, data, limits=limits)
    if not document.title:  # a title given by the user stays; otherwise the document's own
        _update(document, title=document_title(document.filename, data))
    _update(document, sections_total=len(sections))
    title = document.title or title_from_filename(document.filename)
    drafts: list[ChunkDraft] = []
    for section in sections:
        drafts.extend(_section_drafts(section, profile, title))
        if len(drafts) > limits.max_chunks:  # stop before the rest of the document is chunked
            raise LimitExceeded(
                f"it would make {len(drafts):,} chunks or more", limits.max_chunks, "max_chunks", "chunks"
            )
    if not drafts:
        raise ExtractionError(f"no text could be extracted from {document.filename}")
    _update(document, sections_done=len(sections), chunks_total=len(drafts))
    return drafts


def _section_drafts(section, profile: ChunkProfile, title: str) -> list[ChunkDraft]:
    """One section's chunks, each with its contextual header, the header's tokens taken from the budget.

    The semantic strategy already opens each chunk with the heading path, so it gets no header.
    """
    header = (
        ""
        if profile.strategy == "semantic"
        else section_header(section, title=title, count_tokens=count_tokens)
    )
    # The header and its line break are read by the model too: what is left is the chunk's budget.
    budget = MAX_CONTENT_TOKENS - (count_tokens(header) + 1 if header else 0)
    drafts = chunk_sections(
        [section],
        strategy=profile.strategy,
        chunk_size=profile.chunk_size,
        chunk_overlap=profile.chunk_overlap,
        count_tokens=count_tokens,
        max_tokens=max(budget, MIN_CONTENT_TOKENS),
    )
    return [replace(draft, header=header) for draft in drafts]


def _embed_with_progress(document: Document, drafts: Sequence[ChunkDraft]) -> np.ndarray:
    last = [0.0]

    def report(done: int) -> None:
        now = time.monotonic()
        if now - last[0] >= _PROGRESS_INTERVAL_S or done == len(drafts):
            last[0] = now
            _update(document, chunks_done=done)

    return embed_texts(
        [embedding_text(draft.header, draft.content) for draft in drafts],
        batch_size=settings.KNOWLEDGE_EMBEDDING_BATCH_SIZE,
        on_batch=report,
    )


def _summarise(document: Document, drafts, vectors) -> tuple[SummaryDraft, np.ndarray]:
    """The document's summary (the LLM's when one is configured) and its embedding, before any write."""
    draft = summary_draft(filename=document.filename, title=document.title, drafts=drafts, vectors=vectors)
    return draft, embed_texts([draft.router_text()])[0]


def _write_summary(document: Document, summary: tuple[SummaryDraft, np.ndarray]) -> None:
    draft, vector = summary
    DocumentSummary.objects.update_or_create(
        document=document,
        defaults={
            "document_type": draft.document_type,
            "summary": draft.summary,
            "key_topics": draft.key_topics,
            "use_for": draft.use_for,
            "method": draft.method,
            "model": draft.model,
            "note": draft.note,
            "embedding_model": settings.KNOWLEDGE_EMBEDDING_MODEL,
            "embedding": vector,
        },
    )


def _write_chunks(document, profile, drafts, vectors, summary, claim: Claim | None) -> None:
    with transaction.atomic():
        # Lock the row: a concurrent run of the same task waits here, then replaces our set.
        locked = Document.objects.select_for_update().filter(pk=document.pk).first()
        if locked is None:
            raise DocumentGone(document.pk)
        # The job's row stays locked to the end of this transaction: the sweep cannot hand
        # it to another run between this check and the commit.
        if claim is not None and not job_finish(claim=claim):
            raise ClaimLost(document.pk)
        Chunk.objects.filter(document=document, chunk_profile=profile).delete()
        chunks = [
            _chunk_row(document, profile, index, draft, vector)
            for index, (draft, vector) in enumerate(zip(drafts, vectors, strict=True))
        ]
        Chunk.objects.bulk_create(chunks, batch_size=_WRITE_BATCH)
        _write_summary(document, summary)
        _update(
            document,
            status=Document.Status.READY,
            error="",
            processed_at=timezone.now(),
            chunks_done=len(chunks),
        )
        _retire_replaced_version(locked)
        _finish_pending_reindex(document.collection_id, profile)
    logger.info(
        "Document %s ready: %s chunks (job %s, run %s)",
        document.pk,
        len(drafts),
        claim.job_id if claim else "-",
        claim.attempt if claim else "-",
    )


def _chunk_row(document, profile, index, draft: ChunkDraft, vector) -> Chunk:
    section = draft.section
    return Chunk(
        document=document,
        collection_id=document.collection_id,
        chunk_profile=profile,
        embedding_model=settings.KNOWLEDGE_EMBEDDING_MODEL,
        index=index,
        content=draft.content,
        token_count=draft.token_count,
        source_ref=section.source_ref,
        heading_path=list(section.heading_path),
        page=section.page,
        slide=section.slide,
        sheet=section.sheet or "",
        element_id=section.element_id,
        ref_ids=list(section.ref_ids),
        referenced_by=list(section.referenced_by),
        metadata=section.metadata,
        embedding=vector,
    )


def _retire_replaced_version(document: Document) -> None:
    """A new version replaces the old one only now that it is ready."""
    if document.replaces_id is None:
        return
    old = Document.objects.filter(pk=document.replaces_id).first()
    if old is None:
        return
    storage, name = old.file.storage, old.file.name
    old.delete()
    transaction.on_commit(lambda: storage.delete(name) if name else None)


def _finish_pending_reindex(collection_id: int, profile: ChunkProfile) -> None:
    """Switch the collection to its pending profile once no document lacks the new chunks."""
    # NO KEY: the chunk inserts hold key-share locks on this row; a plain FOR UPDATE would deadlock.
    collection = Collection.objects.select_for_update(no_key=True).get(pk=collection_id)
    if collection.pending_chunk_profile_id != profile.pk:
        return
    missing = (
        Document.objects.filter(collection=collection, chunks__chunk_profile_id=collection.chunk_profile_id)
        .exclude(chunks__chunk_profile=profile)
        .exists()
    )
    if not missing:
        collection.chunk_profile = profile
        collection.pending_chunk_profile = None
        collection.save(update_fields=["chunk_profile", "pending_chunk_profile", "updated_at"])


def _update(document: Document, **fields) -> None:
    """Write progress/status straight to the row, so other processes see it at once.

    Raises DocumentGone when the row was deleted, which stops the run.
    """
    if not Document.objects.filter(pk=document.pk).update(updated_at=timezone.now(), **fields):
        raise DocumentGone(document.pk)
    for name, value in fields.items():
        setattr(document, name, value)


def _heartbeat_interval() -> float:
    """Several beats per stale period, so one slow beat never makes a live run look dead."""
    return settings.KNOWLEDGE_PROCESSING_STALE_SECONDS / 5


@contextlib.contextmanager
def _heartbeat(document_id: int, claim: Claim | None = None) -> Iterator[None]:
    """Touch ``updated_at`` (and the job's heartbeat) from a thread while the run is alive,
    even in steps that write no progress."""
    stop = threading.Event()
    thread = threading.Thread(
        target=_beat, args=(document_id, claim, stop, _heartbeat_interval()), name=f"heartbeat-{document_id}"
    )
    thread.daemon = True  # never keeps a dying worker alive
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _beat(document_id: int, claim: Claim | None, stop: threading.Event, interval: float) -> None:
    try:
        while not stop.wait(interval):
            Document.objects.filter(pk=document_id, status=Document.Status.PROCESSING).update(
                updated_at=timezone.now()
            )
            if claim is not None:
                job_beat(claim=claim)
    finally:
        connection.close()  # this thread's own connection; never leave it open
