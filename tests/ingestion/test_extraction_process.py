"""Extraction and chunking in a child process: same drafts, errors with their reasons, no strays.

The drafts themselves are compared with in-process extraction in test_pipeline.py
(``test_overlapped_extraction_yields_the_same_chunks_and_vectors``); the limits and
damaged files in test_amplification.py and test_pipeline.py go through the child too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from knowledge.clients.embedding import get_model
from knowledge.ingestion import extraction_process
from knowledge.ingestion.drafts import ChunkingOptions
from knowledge.ingestion.extraction_process import ExtractionProcessDied, extraction_run
from knowledge.ingestion.limits import DEFAULT_LIMITS
from knowledge.models import Chunk, Document, DocumentSummary
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.text.word_pieces import count_tokens, model_source
from tests.conftest import REPO_ROOT
from tests.waiting import until

OPTIONS = ChunkingOptions(strategy="paragraph", chunk_size=200, chunk_overlap=0)
PARAGRAPH = "A paragraph of plain words about nothing in particular. " * 8
# About 1.4 MB of Markdown in 1,500 sections of two paragraphs: far more than a pipe holds.
BIG_TEXT = "".join(f"# Part {i}\n\n{PARAGRAPH}\n\n{PARAGRAPH}\n\n" for i in range(1500)).encode()


@pytest.fixture
def collection(alice):
    return collection_create(name="papers", owner=alice)


@pytest.fixture
def fresh_children():
    extraction_process.children_stop()
    yield
    extraction_process.children_stop()


def _upload(collection, name: str, data: bytes) -> Document:
    document = document_upload(
        collection=collection, sync=True, upload=DocumentUpload(filename=name, data=data)
    ).document
    document.refresh_from_db()
    return document


@pytest.mark.django_db(transaction=True)
def test_one_child_serves_document_after_document(collection, corpus, fresh_children):
    first = _upload(collection, "gravity_hill.md", (corpus / "text" / "gravity_hill.md").read_bytes())
    [child] = extraction_process._idle
    second = _upload(collection, "bates.txt", (corpus / "text" / "bates.txt").read_bytes())
    assert (first.status, second.status) == (Document.Status.READY, Document.Status.READY)
    assert extraction_process._idle == [child] and child.alive()


@pytest.mark.django_db(transaction=True)
def test_a_child_that_dies_fails_the_document_with_the_reason_and_the_next_one_works(
    collection, corpus, monkeypatch, fresh_children
):
    # A real process that reads the start of its job and is then killed, as the OOM killer would.
    dying = "import os, sys; sys.stdin.buffer.read(1); os.kill(os.getpid(), 9)"
    monkeypatch.setattr(extraction_process, "_COMMAND", (sys.executable, "-c", dying))
    document = _upload(collection, "pasa.pdf", (corpus / "pdf" / "pasa.pdf").read_bytes())
    assert document.status == Document.Status.FAILED
    assert document.error == (
        "pasa.pdf could not be read: the extraction process ended unexpectedly (killed by SIGKILL)"
    )
    assert not Chunk.objects.filter(document=document).exists()
    assert extraction_process._idle == []

    monkeypatch.undo()
    again = _upload(collection, "bates.txt", (corpus / "text" / "bates.txt").read_bytes())
    assert again.status == Document.Status.READY, again.error


def test_a_child_killed_mid_document_raises_its_ending(fresh_children):
    with extraction_run(
        filename="big.md", data=BIG_TEXT, title="", options=OPTIONS, limits=DEFAULT_LIMITS
    ) as run:
        assert run.title() == "Part 0"  # the first heading
        drafts = run.drafts()
        assert next(drafts)[1].content.startswith("A paragraph of plain words")
        os.kill(run._child.process.pid, signal.SIGKILL)
        with pytest.raises(ExtractionProcessDied, match=r"ended unexpectedly \(killed by SIGKILL\)"):
            for _ in drafts:
                pass
    assert extraction_process._idle == []


def test_a_run_left_early_stops_its_child_and_a_finished_one_keeps_it(fresh_children):
    with extraction_run(
        filename="big.md", data=BIG_TEXT, title="Big", options=OPTIONS, limits=DEFAULT_LIMITS
    ) as run:
        assert run.title() == "Big"
        next(run.drafts())
        left = run._child
    assert left.process.poll() is not None  # killed: it would go on cutting for nobody
    with extraction_run(
        filename="small.txt",
        data=b"Some words.\n\nMore words.",
        title="",
        options=OPTIONS,
        limits=DEFAULT_LIMITS,
    ) as run:
        run.title()
        assert [draft.content for _, draft in run.drafts()] == ["Some words.\n\nMore words."]
    assert extraction_process._idle == [run._child] and run._child.alive()


def test_limits_are_applied_in_the_child(fresh_children):
    limits = DEFAULT_LIMITS.__class__(max_chunks=50)
    with extraction_run(filename="big.md", data=BIG_TEXT, title="", options=OPTIONS, limits=limits) as run:
        run.title()
        with pytest.raises(Exception, match="it would make 51 chunks or more.*KNOWLEDGE_MAX_CHUNKS"):
            list(run.drafts())
    assert len(extraction_process._idle) == 1  # a rejected document leaves the child usable


def test_a_child_whose_pipeline_is_killed_exits(tmp_path):
    """The worker dies mid-document (SIGKILL, nothing cleaned up): its child does not stay behind."""
    script = textwrap.dedent(
        f"""
        import os, time
        from knowledge.ingestion.drafts import ChunkingOptions
        from knowledge.ingestion.extraction_process import extraction_run
        from knowledge.ingestion.limits import DEFAULT_LIMITS
        options = ChunkingOptions(strategy="paragraph", chunk_size=200, chunk_overlap=0)
        limits = DEFAULT_LIMITS
        section = "\\n\\n{PARAGRAPH}\\n\\n{PARAGRAPH}\\n\\n"
        data = "".join(f"# Part {{i}}" + section for i in range(1500)).encode()
        with extraction_run(filename="big.md", data=data, title="", options=options, limits=limits) as run:
            run.title()
            replies = os.readlink(f"/proc/self/fd/{{run._child.process.stdout.fileno()}}")
            print(run._child.process.pid, replies, flush=True)
            time.sleep(600)  # reads nothing more: the child fills the pipe and waits
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO_ROOT, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        pid, replies = parent.stdout.readline().split()
        child_pid = int(pid)
        # Mid-document, the child waits on the full pipe nobody reads: bounded output, no buffering.
        until(
            lambda: _waiting_on(child_pid, replies.decode()) or not _running(child_pid),
            "the child waiting on its full pipe (one that is not has buffered what nobody read)",
        )
        assert _running(child_pid), "the child finished a document nobody read: its output was not bounded"
    finally:
        parent.kill()
        parent.wait()
    until(lambda: not _running(child_pid), "the child's exit once its pipeline was killed", 30)


def _waiting_on(pid: int, pipe: str) -> bool:
    """Whether ``pid`` is blocked in a system call on ``pipe`` ("pipe:[inode]"): the child only ever
    writes to its replies' pipe. /proc/<pid>/syscall holds the call's number and its arguments, the
    first of which is the file descriptor ("running", or -1 and two addresses, out of a call)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
        if len(call) < 3 or call[0] == "-1":
            return False
        return os.readlink(f"/proc/{pid}/fd/{int(call[1], 16)}") == pipe
    except (OSError, ValueError):
        return False


def _running(pid: int) -> bool:
    """Alive and not a zombie (the child's parent is gone, so init reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_count_tokens_counts_what_the_model_tokenizer_counts(corpus):
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(model_source()))
    text = (corpus / "django-docs" / "topics" / "db" / "queries.txt").read_text()
    samples = [text[i : i + 1500] for i in range(0, 60_000, 1500)]
    samples += ["", " ", "héllo wörld ñ 中文 😀 \u200b", "word " * 2000, "x\n\ny\t z"]
    counts = [count_tokens(sample) for sample in samples]
    assert counts == [len(reference.encode(s, add_special_tokens=False, verbose=False)) for s in samples]
    assert counts[-2] == 2000  # no truncation at the model's 256


@pytest.mark.django_db(transaction=True)
def test_the_summary_vector_is_in_the_documents_space(collection, corpus):
    document = _upload(collection, "bates.txt", (corpus / "text" / "bates.txt").read_bytes())
    summary = DocumentSummary.objects.get(document=document)
    # Encoded by the questions' encoder (onnxruntime), compared with the documents' (torch).
    by_documents_encoder = get_model().encode([summary.router_text()], normalize_embeddings=True)[0]
    assert float(np.dot(np.asarray(summary.embedding), by_documents_encoder)) > 0.999
