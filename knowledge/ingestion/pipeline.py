"""The document pipeline: the only code that writes chunks.

extract (pure) -> chunk (pure) -> embed -> summarise (an extracted summary while
the chunks are inserted) -> one transaction that
replaces the document's chunk set for the chunk profile and its summary. Running it twice, or again after a
worker died half-way, leaves exactly one complete chunk set: nothing is written
until the last step, and that step deletes and inserts atomically.

Every progress write doubles as a heartbeat (``updated_at``), and a thread
beats while a long step (extraction, an LLM summary) writes nothing, so a
``processing`` document that stops beating belongs to a dead worker
(``knowledge.services.documents.documents_fail_stale``). A progress write that finds
the row gone means the document was deleted: the run stops there and writes
nothing more.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from config.base.errors import QuotaExceededError
from knowledge.clients.embedding import embed_short_texts, embed_texts
from knowledge.clients.embedding_endpoints import EndpointError
from knowledge.ingestion.drafts import ChunkingOptions, document_drafts
from knowledge.ingestion.extraction_process import extraction_run
from knowledge.ingestion.headers import embedding_text, title_from_filename
from knowledge.ingestion.producer import Producer
from knowledge.ingestion.reindex import ChunkSet, chunk_set_wanted, finish_pending_reindex, reindex_stop
from knowledge.ingestion.summary import SummaryDraft, SummaryWriter, summary_by, summary_writer
from knowledge.ingestion.titles import document_title
from knowledge.ingestion.types import ChunkDraft, ExtractionError
from knowledge.models import Chunk, ChunkProfile, Collection, Document, DocumentSummary
from knowledge.processing_jobs import Claim, job_beat, job_finish
from knowledge.quotas import quota_chunks_check, quota_chunks_lock

logger = logging.getLogger(__name__)

_WRITE_BATCH = 500
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
    model = run_embedding_model(document.collection, chunk_profile_id=chunk_profile_id)
    try:
        with _heartbeat(document.pk, claim) as watch:
            _process(document, profile, model, claim, watch)
    except ClaimLost:
        logger.warning("Document %s: this run's job was handed to another run; wrote nothing", document_id)
    except DocumentGone:
        logger.info(
            "Document %s was deleted while processing; stopped after %s of %s chunks, writing nothing",
            document_id,
            document.chunks_done,
            document.chunks_total,
        )


def run_embedding_model(collection: Collection, *, chunk_profile_id: int | None) -> str:
    """The model a run embeds with: a re-index's runs (queued with its target's chunk profile)
    write the re-index's target model; every other run writes the collection's own model."""
    target = collection.reindex_target
    if chunk_profile_id is not None and target is not None and target[0] == chunk_profile_id:
        return target[1]
    return collection.embedding_model


def _process(
    document: Document, profile: ChunkProfile, model: str, claim: Claim | None, watch: _Watch
) -> None:
    _update(
        document,
        status=Document.Status.PROCESSING,
        error="",
        stage="",
        skipped=[],
        sections_total=0,
        sections_done=0,
        chunks_total=0,
        chunks_done=0,
    )
    try:
        drafts, vectors = _drafts_and_vectors(document, profile, watch, model=model)
        keep = _summary_kept(document, ChunkSet(profile, model))
        with _summary_meanwhile(document, drafts, vectors, model, keep=keep) as summary:
            _write_chunks(document, ChunkSet(profile, model), drafts, vectors, summary, claim)
    except ExtractionError as exc:
        if watch.gone.is_set():  # the watcher stopped the extraction because the row is gone
            raise DocumentGone(document.pk) from None
        _fail(document, claim, str(exc))
    except QuotaExceededError as exc:  # nothing was written; an old version stays searchable
        _quota_refused(document, ChunkSet(profile, model), claim, str(exc))
    except EndpointError as exc:  # the client retried with backoff first; nothing was written
        _fail(document, claim, f"embedding failed: {exc}")
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
        _update(document, status=Document.Status.FAILED, error=error, stage="")


def _quota_refused(document: Document, chunk_set: ChunkSet, claim: Claim | None, error: str) -> None:
    """Over the chunk quota nothing was written. A document still serving its current chunks stays
    ready with the reason (a re-index of it is what was refused), and a collection re-index it was
    part of stops, since it could never switch; any other document fails."""
    collection = Collection.objects.get(pk=document.collection_id)
    serving = Chunk.objects.filter(
        document=document,
        chunk_profile_id=collection.chunk_profile_id,
        embedding_model=collection.embedding_model,
    )
    if not serving.exists():
        _fail(document, claim, error)
        return
    with transaction.atomic():
        if claim is not None and not job_finish(claim=claim, failed=True):
            raise ClaimLost(document.pk)
        _update(document, status=Document.Status.READY, error=f"not re-indexed: {error}", stage="")
        reindex_stop(collection_id=collection.pk, chunk_set=chunk_set, reason=f"{document.filename}: {error}")


def document_chunk_drafts(document: Document, profile: ChunkProfile) -> list[ChunkDraft]:
    """Extract and chunk the stored original in this process (pure steps; nothing is written but the title).

    The same drafts as the pipeline's, which cuts them in the extraction process.
    """
    data = _original(document)
    if not document.title:  # a title given by the user stays; otherwise the document's own
        _update(document, title=document_title(document.filename, data))
    drafts = document_drafts(
        filename=document.filename,
        data=data,
        title=document.title or title_from_filename(document.filename),
        options=_chunking_options(profile),
        limits=settings.KNOWLEDGE_INGEST_LIMITS,
    )
    return [draft for _, draft in drafts]


def _original(document: Document) -> bytes:
    with document.file.open("rb") as handle:
        return handle.read()


def _chunking_options(profile: ChunkProfile) -> ChunkingOptions:
    return ChunkingOptions(
        strategy=profile.strategy, chunk_size=profile.chunk_size, chunk_overlap=profile.chunk_overlap
    )


def _drafts_and_vectors(
    document: Document, profile: ChunkProfile, watch: _Watch | None = None, *, model: str | None = None
) -> tuple[list[ChunkDraft], np.ndarray]:
    """Every chunk draft and its vector; extraction and chunking run ahead in a process of their own.

    The encoder (which releases the GIL while it computes) never waits for
    pypdf: while it embeds one window of drafts, the extraction process
    (``extraction_process.py``, no interpreter lock shared with this one)
    extracts and chunks the next pages, and a thread here only unpickles them.
    Windows of several batches, sorted by length inside (``embed_texts``), keep
    padding as low as embedding the whole list at once. ``chunks_total`` counts
    the drafts produced so far until extraction ends. A document deleted
    meanwhile has its extraction process killed by the ``watch`` (none: nobody watches).
    """
    watch = watch or _Watch()
    drafts: list[ChunkDraft] = []
    vectors: list[np.ndarray] = []
    batch = settings.KNOWLEDGE_EMBEDDING_BATCH_SIZE
    sections = 0
    with (
        extraction_run(
            filename=document.filename,
            data=_original(document),
            title=document.title,
            options=_chunking_options(profile),
            limits=settings.KNOWLEDGE_INGEST_LIMITS,
        ) as run,
        watch.on_gone(run.stop),
    ):
        title = run.title()
        if not document.title:  # a title given by the user stays; otherwise the document's own
            _update(document, title=title)
        progress = _Progress(document, run)
        with Producer(run.drafts(), on_stop=run.abort, ahead=_PRODUCER_AHEAD) as produced:
            # Start as soon as a few drafts are there (the encoder waits only for the first
            # pages), then take at least a batch, and more when the producer has run ahead.
            minimum = min(batch, _FIRST_WINDOW)
            while window := produced.take(
                minimum=minimum, maximum=batch * _WINDOW_BATCHES, idle=progress.report_stage
            ):
                minimum = batch
                sections = window[-1][0]
                window_drafts = [draft for _, draft in window]
                vectors.append(
                    _embed_window(window_drafts, progress, model, done=len(drafts), known=produced.count)
                )
                drafts.extend(window_drafts)
    if not drafts:
        raise ExtractionError(f"no text could be extracted from {document.filename}")
    _update(
        document,
        sections_total=sections,
        sections_done=sections,
        chunks_total=len(drafts),
        chunks_done=len(drafts),
        stage="",
        skipped=run.skipped,
    )
    return drafts, np.concatenate(vectors)


# The first window: this many drafts are enough to start the encoder.
_FIRST_WINDOW = 8
# At most this many batches per embedding window: enough texts to sort by length, few enough to
# keep progress moving.
_WINDOW_BATCHES = 4
# Drafts the producer may run ahead of the encoder (bounds memory on a huge document).
_PRODUCER_AHEAD = 2048


class _Progress:
    """Writes chunks done / known, and the reader's stage, at most every _PROGRESS_INTERVAL_S seconds."""

    def __init__(self, document: Document, run):
        self.document = document
        self.run = run  # its ``stage``: what the reader last said it is doing
        self.last = 0.0

    def report(self, *, done: int, known: int) -> None:
        if self._due():
            _update(self.document, chunks_done=done, chunks_total=max(known, done), **self._stage())

    def report_stage(self) -> None:
        """While the encoder waits for the reader (a page read by OCR takes a second or more)."""
        stage = self._stage()
        if stage and self._due():
            _update(self.document, **stage)

    def _due(self) -> bool:
        now = time.monotonic()
        if now - self.last < _PROGRESS_INTERVAL_S:
            return False
        self.last = now
        return True

    def _stage(self) -> dict:
        return {"stage": self.run.stage[:200]} if self.run.stage != self.document.stage else {}


def _embed_window(
    window: list[ChunkDraft], progress: _Progress, model: str | None, *, done: int, known: int
) -> np.ndarray:
    return embed_texts(
        [embedding_text(draft.header, draft.content) for draft in window],
        model=model,
        batch_size=settings.KNOWLEDGE_EMBEDDING_BATCH_SIZE,
        on_batch=lambda n: progress.report(done=done + n, known=known),
    )


def _summarise(
    document: Document, drafts, vectors, model: str, writer: SummaryWriter
) -> tuple[SummaryDraft, np.ndarray]:
    """The document's summary (the LLM's when one is configured) and its embedding.

    The summary's vector is always in the default model's space, whatever the chunks' model: the
    router compares it with the question's vector under that model (knowledge.agents).
    It reads and writes nothing in the database (an extracted summary is made in a thread)."""
    draft = summary_by(
        writer, filename=document.filename, title=document.title, drafts=drafts, vectors=vectors, model=model
    )
    return draft, embed_short_texts([draft.router_text()])[0]


def _summary_kept(document: Document, chunk_set: ChunkSet) -> bool:
    """Whether a run keeps the document's summary instead of making it again: a re-index's run
    (writing a release that does not serve yet) reads the same file, so the summary it would make
    describes the same document, at the cost of an LLM call (or an extracted summary) per document."""
    collection = document.collection
    serving = (collection.chunk_profile_id, collection.embedding_model)
    if (chunk_set.profile.pk, chunk_set.model) == serving:
        return False
    return DocumentSummary.objects.filter(document=document).exists()


@contextlib.contextmanager
def _summary_meanwhile(
    document: Document, drafts, vectors, model: str, *, keep: bool
) -> Iterator[Callable[[], tuple | None]]:
    """A function that returns the summary (None when ``keep``: the stored one stays): made while
    the chunks are written when that is safe.

    An extracted summary is made in a thread meanwhile: its sentences are embedded
    on onnxruntime while PostgreSQL inserts the chunks and their HNSW entries
    (measured 0.9 s for 149 chunks, the summary 2.2 s, one after the other
    before), and the transaction waits for it only to write it. An LLM's summary
    is made before the transaction, as before: a slow model must not hold its locks.
    Either way the summary is the same; an error in it fails the document.
    """
    if keep:
        yield lambda: None
        return
    writer = summary_writer()  # reads the database: here, not in the thread
    if writer.llm is not None:
        summary = _summarise(document, drafts, vectors, model, writer)
        yield lambda: summary
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="summary") as pool:
        # A write that fails first waits here for the thread before the error goes on.
        yield pool.submit(_summarise, document, drafts, vectors, model, writer).result


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


def _write_chunks(
    document, chunk_set: ChunkSet, drafts, vectors, summary: Callable[[], tuple | None], claim: Claim | None
) -> None:
    with transaction.atomic():
        limits = quota_chunks_lock(user_id=document.uploaded_by_id)
        # Lock the row: a concurrent run of the same task waits here, then replaces our set.
        locked = Document.objects.select_for_update().filter(pk=document.pk).first()
        if locked is None:
            raise DocumentGone(document.pk)
        if not chunk_set_wanted(collection_id=document.collection_id, chunk_set=chunk_set):
            _unwanted_set_skip(document, claim)
            return
        _chunk_quota_check(locked, chunk_set, limits, adding=len(drafts))
        # The job's row stays locked to the end of this transaction: the sweep cannot hand
        # it to another run between this check and the commit.
        if claim is not None and not job_finish(claim=claim):
            raise ClaimLost(document.pk)
        Chunk.objects.filter(
            document=document, chunk_profile=chunk_set.profile, embedding_model=chunk_set.model
        ).delete()
        chunks = [
            _chunk_row(document, chunk_set, index, draft, vector)
            for index, (draft, vector) in enumerate(zip(drafts, vectors, strict=True))
        ]
        Chunk.objects.bulk_create(chunks, batch_size=_WRITE_BATCH)
        made = summary()
        if made is not None:
            _write_summary(document, made)
        _update(
            document,
            status=Document.Status.READY,
            error="",
            processed_at=timezone.now(),
            chunks_done=len(chunks),
        )
        _retire_replaced_version(locked)
        finish_pending_reindex(document.collection_id, chunk_set)
    logger.info(
        "Document %s ready: %s chunks (job %s, run %s)",
        document.pk,
        len(drafts),
        claim.job_id if claim else "-",
        claim.attempt if claim else "-",
    )


def _unwanted_set_skip(document: Document, claim: Claim | None) -> None:
    """The re-index this run wrote for stopped or was cancelled meanwhile: its set would be searched
    by nobody and only cost quota, so nothing is written; a document serving chunks is ready again."""
    if claim is not None and not job_finish(claim=claim):
        raise ClaimLost(document.pk)
    collection = document.collection
    serving = Chunk.objects.filter(
        document=document,
        chunk_profile_id=collection.chunk_profile_id,
        embedding_model=collection.embedding_model,
    )
    if serving.exists():
        _update(document, status=Document.Status.READY, stage="")
    logger.info("Document %s: its re-index stopped meanwhile; wrote nothing", document.pk)


def _chunk_quota_check(document: Document, chunk_set: ChunkSet, limits: dict, *, adding: int) -> None:
    """Over the uploader's chunk quota the run fails and writes nothing; the set it replaces and a
    retired old version's chunks are gone once it commits, so they do not count against it."""
    if limits["chunks"] is None:
        return
    replaced = Q(document=document, chunk_profile=chunk_set.profile, embedding_model=chunk_set.model)
    # A retired old version's chunks are credited only to its own uploader (a team writer replacing
    # the owner's version pays for the whole new set).
    replaced |= Q(document_id=document.replaces_id, document__uploaded_by_id=document.uploaded_by_id)
    collection = document.collection
    serving = (collection.chunk_profile_id, collection.embedding_model)
    if (chunk_set.profile.pk, chunk_set.model) != serving:  # a re-index's set replaces the serving one
        replaced |= Q(document=document, chunk_profile_id=serving[0], embedding_model=serving[1])
    removing = Chunk.objects.filter(replaced).count()
    quota_chunks_check(
        user_id=document.uploaded_by_id,
        limits=limits,
        filename=document.filename,
        adding=adding,
        removing=removing,
    )


def _chunk_row(document, chunk_set: ChunkSet, index, draft: ChunkDraft, vector) -> Chunk:
    section = draft.section
    return Chunk(
        document=document,
        collection_id=document.collection_id,
        chunk_profile=chunk_set.profile,
        embedding_model=chunk_set.model,
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
        metadata={**section.metadata, **draft.metadata},
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


# How often a run checks that its document still exists: a deleted document's extraction
# process (which may be busy for minutes on one page) is killed within about this long.
_GONE_CHECK_S = 2.0


class _Watch:
    """What the heartbeat thread knows: whether the document was deleted, and what to stop then."""

    def __init__(self) -> None:
        self.gone = threading.Event()
        self._lock = threading.Lock()
        self._stops: list[Callable[[], None]] = []

    @contextlib.contextmanager
    def on_gone(self, stop: Callable[[], None]) -> Iterator[None]:
        """Call ``stop`` (from the heartbeat thread) if the document is deleted while the block runs."""
        with self._lock:
            self._stops.append(stop)
            already = self.gone.is_set()
        if already:
            stop()
        try:
            yield
        finally:
            with self._lock:
                self._stops.remove(stop)

    def document_gone(self) -> None:
        # Stops run under the lock: once on_gone's block has ended, its child may be serving another
        # document, and a late stop must not kill it. A stop only signals a process: it never blocks.
        with self._lock:
            self.gone.set()
            for stop in self._stops:
                stop()


@contextlib.contextmanager
def _heartbeat(document_id: int, claim: Claim | None = None) -> Iterator[_Watch]:
    """Touch ``updated_at`` (and the job's heartbeat) from a thread while the run is alive,
    even in steps that write no progress; and notice the document's deletion meanwhile."""
    stop = threading.Event()
    watch = _Watch()
    # A run inside a transaction (a caller that processes in its own atomic block, as the tests do)
    # works on a row other connections cannot see yet: the thread's connection must see it first.
    committed = not connection.in_atomic_block
    thread = threading.Thread(
        target=_beat,
        args=(document_id, claim, stop, _heartbeat_interval(), watch, committed),
        name=f"heartbeat-{document_id}",
    )
    thread.daemon = True  # never keeps a dying worker alive
    thread.start()
    try:
        yield watch
    finally:
        stop.set()
        thread.join()


def _beat(
    document_id: int, claim: Claim | None, stop: threading.Event, interval: float, watch: _Watch, seen: bool
) -> None:
    """``seen``: the row is committed (visible to this thread's connection); else it is gone only
    once this connection has seen it and then misses it."""
    last_beat = time.monotonic()
    try:
        while not stop.wait(min(interval, _GONE_CHECK_S)):
            if Document.objects.filter(pk=document_id).exists():
                seen = True
            elif seen:
                watch.document_gone()
                return
            if time.monotonic() - last_beat < interval:
                continue
            last_beat = time.monotonic()
            Document.objects.filter(pk=document_id, status=Document.Status.PROCESSING).update(
                updated_at=timezone.now()
            )
            if claim is not None:
                job_beat(claim=claim)
    finally:
        connection.close()  # this thread's own connection; never leave it open
