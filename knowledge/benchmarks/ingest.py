"""knowledge_bench ingest: the pipeline's throughput against the raw encoder's.

Both are measured in one run on the same chunk texts, document by document and
alternated: for each file, ``rounds`` times the raw encoder on the texts the
pipeline embeds (each chunk with its contextual header) and the whole pipeline
(a new document each time), then the raw encoder once more; each file counts
with the median of its pipeline runs and of its raw runs. On a shared machine
the load changes within seconds: alternating puts both under the same load, and
medians drop the runs another process disturbed. Pipeline chunks/s covers
upload, extraction, chunking, embedding, the summary and writing; raw encoder
chunks/s is model.encode alone.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from django.conf import settings

from knowledge.benchmarks.common import peak_memory_mb, throwaway_collection
from knowledge.clients.embedding import get_model
from knowledge.ingestion.headers import embedding_text
from knowledge.ingestion.pipeline import document_chunk_drafts
from knowledge.models import Document
from knowledge.services.documents import DocumentUpload, document_delete, document_upload

DEFAULT_FILES = (
    "pdf/pasa.pdf",
    "office/dummy.docx",
    "office/dummy.xlsx",
    "html/flag_day.html",
    "text/gravity_hill.md",
    "text/bates.txt",
    "openapi/petstore-expanded-3.0.json",
    "django-docs/topics/db/queries.txt",
)


def default_files() -> list[Path]:
    corpus = Path(settings.BASE_DIR).parent / "shared" / "corpus"
    return [corpus / name for name in DEFAULT_FILES]


def run(stdout, *, files: list[Path], backend: str, rounds: int = 3) -> dict:
    settings.KNOWLEDGE_EMBEDDING_BACKEND = backend  # this process only
    model = get_model(backend)
    model.encode(["warm up the model"], show_progress_bar=False)
    started_load = os.getloadavg()[0]
    pipeline_seconds = raw_seconds = 0.0
    chunks = failures = 0
    with throwaway_collection("bench-ingest") as collection:
        _pipeline(collection, files[0])  # warm up the extraction process and the question encoder
        for path in files:
            document, seconds, raw, texts = _file(collection, path, model, rounds)
            failures += document.status != Document.Status.READY
            pipeline_seconds, raw_seconds, chunks = (
                pipeline_seconds + seconds,
                raw_seconds + raw,
                chunks + len(texts),
            )
            stdout.write(
                f"  {path.name:<40} {document.status:<8} {len(texts):>6} chunks  pipeline "
                f"{seconds:6.2f} s  raw {raw:6.2f} s  ratio {raw / seconds:5.3f} {document.error}\n"
            )
    figures = {
        "benchmark": "ingest",
        "backend": backend,
        "files": len(files),
        "rounds": rounds,
        "failed": failures,
        "chunks": chunks,
        "pipeline_seconds": round(pipeline_seconds, 2),
        "pipeline_chunks_per_s": round(chunks / pipeline_seconds, 2),
        "raw_encoder_seconds": round(raw_seconds, 2),
        "raw_encoder_chunks_per_s": round(chunks / raw_seconds, 2) if raw_seconds else 0.0,
        "ratio": round(raw_seconds / pipeline_seconds, 3),
        "peak_memory_mb": round(peak_memory_mb(), 1),
        "load_average": [round(started_load, 2), round(os.getloadavg()[0], 2)],
    }
    _print_table(stdout, figures)
    stdout.write(json.dumps(figures) + "\n")
    return figures


def _file(collection, path: Path, model, rounds: int) -> tuple[Document, float, float, list[str]]:
    """(last document, median pipeline seconds, median raw encoder seconds, texts), runs alternated."""
    document, seconds = _pipeline(collection, path)
    texts = _embedded_texts(document) if document.status == Document.Status.READY else []
    pipeline_runs, raw_runs = [seconds], []
    for _ in range(rounds - 1):
        raw_runs.append(_raw_encoder(model, texts))
        document, seconds = _pipeline(collection, path)
        pipeline_runs.append(seconds)
    raw_runs.append(_raw_encoder(model, texts))
    return document, statistics.median(pipeline_runs), statistics.median(raw_runs), texts


def _pipeline(collection, path: Path) -> tuple[Document, float]:
    """One upload and processing of ``path`` as a new document (an earlier run's copy is deleted first)."""
    for earlier in Document.objects.filter(collection=collection, filename=path.name):
        document_delete(document=earlier)
    started = time.perf_counter()
    result = document_upload(
        collection=collection, sync=True, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    seconds = time.perf_counter() - started
    return Document.objects.get(pk=result.document.pk), seconds


def _embedded_texts(document: Document) -> list[str]:
    """The very texts the pipeline embedded: each chunk with its contextual header (pure steps again)."""
    drafts = document_chunk_drafts(document, document.collection.chunk_profile)
    return [embedding_text(draft.header, draft.content) for draft in drafts]


def _raw_encoder(model, texts: list[str]) -> float:
    started = time.perf_counter()
    if texts:
        batch = settings.KNOWLEDGE_EMBEDDING_BATCH_SIZE
        model.encode(texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False)
    return time.perf_counter() - started


def _print_table(stdout, f: dict) -> None:
    stdout.write(
        f"\nbackend {f['backend']}: {f['chunks']} chunks from {f['files']} files ({f['failed']} failed)\n"
        f"  pipeline      {f['pipeline_chunks_per_s']:8.2f} chunks/s  ({f['pipeline_seconds']} s)\n"
        f"  raw encoder   {f['raw_encoder_chunks_per_s']:8.2f} chunks/s  ({f['raw_encoder_seconds']} s)\n"
        f"  ratio         {f['ratio']:8.3f}  (pipeline / raw encoder; medians of {f['rounds']} runs)\n"
        f"  load average  {f['load_average'][0]} at the start, {f['load_average'][1]} at the end\n"
        f"  peak memory   {f['peak_memory_mb']:8.1f} MB\n"
    )
