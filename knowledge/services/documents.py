"""Services for documents: every upload path (admin, pages, API, command) ends here."""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.audit import audit_record
from accounts.throttles import user_throttle_charge
from config.base.errors import KnowledgeError, UnsupportedMediaError, UploadTooLargeError
from knowledge.ingestion.extract import detect_format
from knowledge.ingestion.formats.image import image_kind
from knowledge.ingestion.reindex import pending_reindex_check
from knowledge.ingestion.types import ExtractionError, UnsupportedFormat
from knowledge.models import Collection, Document
from knowledge.models.documents import document_filename_clean
from knowledge.processing_jobs import PROCESSING_INTERRUPTED, job_enqueue, jobs_recover_stale
from knowledge.quotas import quota_storage_check

FORMAT_CONTENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "csv": "text/csv",
    "html": "text/html",
    "markdown": "text/markdown",
    "text": "text/plain",
}
IMAGE_CONTENT_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "TIFF": "image/tiff", "WebP": "image/webp"}
# Every type format_content_type can give: the only ones a stored original is ever served with.
SERVED_CONTENT_TYPES = frozenset(
    [
        *FORMAT_CONTENT_TYPES.values(),
        *IMAGE_CONTENT_TYPES.values(),
        "application/json",
        "application/yaml",
        "text/tab-separated-values",
    ]
)


@dataclass(frozen=True)
class UploadResult:
    document: Document
    created: bool  # False: these bytes were already in the collection


@dataclass(frozen=True)
class DocumentUpload:
    """One uploaded file as the client named it, with the metadata given beside it (all optional)."""

    filename: str
    data: bytes
    title: str = ""
    author: str = ""
    category: str = ""
    tags: list[str] | None = None
    source_date: datetime.date | None = None


def document_upload(
    *, collection: Collection, upload: DocumentUpload, uploaded_by=None, sync: bool | None = None
) -> UploadResult:
    """Store an upload in ``collection`` and queue its processing, or return the copy already stored.

    Refuses up front what can never be processed (empty, too large, unsupported
    or malformed); anything else that fails later ends as a failed document
    with its reason, and never touches the collection's other documents. The
    stored content type is the one of the format detected in the bytes: a
    client-declared type is never trusted (it is what a browser would obey). A document over the
    uploader's documents or bytes quota is refused before anything is stored (knowledge.quotas).
    """
    data = upload.data
    filename = document_filename_clean(upload.filename)
    upload_size_check(filename=filename, size=len(data))
    if not data.strip():
        raise KnowledgeError(f"{filename}: the file is empty")
    detected = _check_format(filename, data)
    content_hash = hashlib.sha256(data).hexdigest()
    existing = Document.objects.filter(collection=collection, content_hash=content_hash).first()
    if existing:
        return UploadResult(existing, created=False)
    try:
        with transaction.atomic():
            quota_storage_check(user_id=getattr(uploaded_by, "pk", None), filename=filename, size=len(data))
            document = _create_document(
                collection=collection,
                filename=filename,
                data=data,
                content_hash=content_hash,
                uploaded_by=uploaded_by,
                title=upload.title.strip(),
                author=upload.author.strip(),
                category=upload.category.strip(),
                tags=upload.tags or [],
                source_date=upload.source_date,
                content_type=format_content_type(detected, filename=filename, data=data),
            )
            changes = {"filename": [None, filename], "collection": [None, collection.pk]}
            audit_record(action="document.uploaded", obj=document, changes=changes, default_actor=uploaded_by)
            _enqueue_for_collection(document, sync=sync)
    except IntegrityError:
        # The same bytes arrived concurrently; the other upload won.
        return UploadResult(Document.objects.get(collection=collection, content_hash=content_hash), False)
    return UploadResult(document, created=True)


def upload_size_check(*, filename: str, size: int) -> None:
    """Callers holding a streamed upload check this before reading it into memory."""
    limit = settings.KNOWLEDGE_MAX_UPLOAD_BYTES
    if size > limit:
        raise UploadTooLargeError(
            f"{filename} is {size / 1048576:.1f} MB; the limit is {limit / 1048576:.0f} MB"
        )


def format_content_type(fmt: str, *, filename: str, data: bytes = b"") -> str:
    """The content type of a detected format; JSON/YAML and CSV/TSV differ only by extension, an
    image's kind is read from its bytes."""
    if fmt == "image":
        return IMAGE_CONTENT_TYPES[image_kind(data)]
    suffix = PurePath(filename).suffix.lower()
    if fmt == "openapi":
        return "application/json" if suffix == ".json" else "application/yaml"
    if fmt == "csv" and suffix == ".tsv":
        return "text/tab-separated-values"
    return FORMAT_CONTENT_TYPES[fmt]


def _check_format(filename: str, data: bytes) -> str:
    try:
        return detect_format(filename, data, limits=settings.KNOWLEDGE_INGEST_LIMITS)
    except ExtractionError as exc:
        message = str(exc)
        error = UnsupportedMediaError if isinstance(exc, UnsupportedFormat) else KnowledgeError
        raise error(message if filename in message else f"{filename}: {message}") from None


def _create_document(*, collection, filename, data, content_hash, **fields) -> Document:
    previous = (
        Document.objects.filter(collection=collection, filename=filename, replaced_by__isnull=True)
        .exclude(status=Document.Status.FAILED)
        .order_by("-created_at")
        .first()
    )
    document = Document(
        collection=collection,
        filename=filename,
        content_hash=content_hash,
        size=len(data),
        replaces=previous,
        **fields,
    )
    document.file.save(filename, ContentFile(data), save=False)
    document.save()
    return document


def enqueue_document_processing(
    *, document_id: int, chunk_profile_id: int | None = None, sync: bool | None = None
) -> bool:
    """Queue processing once the surrounding transaction commits (the row must be visible); False
    when the document already waits for that processing (the request joins it: ``job_enqueue``)."""
    return job_enqueue(document_id=document_id, chunk_profile_id=chunk_profile_id, sync=sync)


def _enqueue_for_collection(document: Document, *, sync: bool | None) -> bool:
    """Queue the document's processing under its collection's profile, and under the target of a
    re-index in progress; False when it already waited for both."""
    collection = document.collection
    queued = enqueue_document_processing(document_id=document.pk, sync=sync)
    target = collection.reindex_target  # a re-index in progress needs this document's new set too
    if target is not None:
        queued |= enqueue_document_processing(document_id=document.pk, chunk_profile_id=target[0], sync=sync)
    return queued


def document_retry(*, document: Document, sync: bool | None = None) -> Document:
    """Process a failed (or stuck) document again from its stored original."""
    if document.status == Document.Status.READY:
        raise KnowledgeError(f"{document.filename} is ready; re-index it instead of retrying")
    with transaction.atomic():
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.UPLOADED, error="", chunks_done=0, sections_done=0
        )
        audit_record(action="document.retried", obj=document)
        _enqueue_for_collection(document, sync=sync)
    document.refresh_from_db()
    return document


def reindex_charge(*, user) -> None:
    """One write of ``user``'s rate for a re-index asked for, of a document or a whole collection:
    the same on every path (accounts.throttles)."""
    user_throttle_charge(user=user, scope="writes")


def document_reindex_asked(*, user, document: Document) -> Document:
    """A re-index of one document ``user`` asked for (after the caller's access check): charged, then done."""
    reindex_charge(user=user)
    return document_reindex(document=document)


def document_reindex(*, document: Document, sync: bool | None = None) -> Document:
    """Re-chunk and re-embed one document under its collection's current profile; a document still
    waiting for that run joins it. The ask is recorded either way (one ask, one write, one record)."""
    with transaction.atomic():
        audit_record(action="document.reindexed", obj=document)
        _enqueue_for_collection(document, sync=sync)
    document.refresh_from_db()
    return document


@transaction.atomic
def document_reindex_queued(*, document: Document) -> bool:
    """One document of a collection read again: whether anything was queued, recorded only then
    (one ask of a whole collection, repeated while its documents wait, would otherwise write a
    record per document each time)."""
    queued = _enqueue_for_collection(document, sync=None)
    if queued:
        audit_record(action="document.reindexed", obj=document)
    return queued


def document_delete(*, document: Document) -> None:
    """Delete the row (its chunks cascade) and then the stored original; a re-index in progress that
    waited only for this document switches now."""
    with transaction.atomic():
        document_files_delete_on_commit(documents=[document])
        collection_id = document.collection_id
        audit_record(action="document.deleted", obj=document, changes={"collection": [collection_id, None]})
        document.delete()
        pending_reindex_check(collection_id)


def document_files_delete_on_commit(*, documents: Iterable[Document]) -> None:
    """Delete the documents' stored originals once the transaction deleting their rows commits.

    Names are read now, before a cascade removes the rows; a rollback keeps the
    files, so a failed delete never leaves rows pointing at missing originals.
    """
    files = [(d.file.storage, d.file.name) for d in documents if d.file.name]
    transaction.on_commit(lambda: [storage.delete(name) for storage, name in files])


def documents_fail_stale(*, documents: QuerySet[Document], now: datetime.datetime | None = None) -> int:
    """Re-queue or mark failed the ``processing`` documents among ``documents`` whose heartbeat stopped.

    A live run touches ``updated_at`` at least every few seconds of work (see
    the pipeline's heartbeat); one silent for KNOWLEDGE_PROCESSING_STALE_SECONDS
    lost its worker (killed, out of memory, timed out). Called where documents
    are read and when a worker starts a task, so no extra process is needed.
    Returns how many were marked.
    """
    now = now or timezone.now()
    # A run of a queued job is not lost: its job goes back in the queue (up to its attempts).
    jobs_recover_stale(now=now, document_ids=documents.values("pk"))
    cutoff = now - datetime.timedelta(seconds=settings.KNOWLEDGE_PROCESSING_STALE_SECONDS)
    return documents.filter(status=Document.Status.PROCESSING, updated_at__lt=cutoff).update(
        status=Document.Status.FAILED, error=PROCESSING_INTERRUPTED, updated_at=now
    )


# The processing counters, in the order the pages and the API show them, and what is being done now.
PROGRESS_FIELDS = ("sections_done", "sections_total", "chunks_done", "chunks_total", "stage")


def document_progress(*, document: Document | Mapping) -> dict:
    """Processing progress as the pages and the API show it: the counters, a percent (0-100) and the
    stage ("reading page 3 of 40 (OCR)"; empty unless the document is being processed).

    ``document`` is a Document or a ``.values()`` row holding ``status`` and the counters.
    """
    fields = ("status", *PROGRESS_FIELDS)
    row = document if isinstance(document, Mapping) else {f: getattr(document, f) for f in fields}
    if row["status"] == Document.Status.READY:
        percent = 100
    elif row["chunks_total"]:
        percent = 10 + int(90 * row["chunks_done"] / row["chunks_total"])
    else:
        percent = 5 if row["status"] == Document.Status.PROCESSING else 0
    stage = row["stage"] if row["status"] == Document.Status.PROCESSING else ""
    return {field: row[field] for field in PROGRESS_FIELDS} | {"percent": percent, "stage": stage}
