"""Extraction and chunking in a process of their own, streamed back to the pipeline.

pypdf, openpyxl, python-docx and BeautifulSoup are pure Python: in the
pipeline's process they hold the interpreter lock the encoder also needs
between its operations (measured: the pipeline at 0.72 of the raw encoder on a
PDF). Here they run in a child process, so the encoder never waits for them.

One child per busy thread, started on a document's first use and kept for the
next documents (starting one costs about a second); it needs neither Django nor
the model's weights. The protocol is pickles over the child's stdin/stdout:

    pipeline -> child   a job: file name, bytes, title (or ""), chunking options, limits
    child -> pipeline   ("title", str), then ("drafts", [(section number, draft), ...]) in
                        small batches, with ("stage", "reading page 3 of 40 (OCR)") and ("skipped",
                        reason) among them as the reader reports them (reporting.py),
                        then ("done", None) | ("rejected", message) | ("crashed", text)
                        | ("exhausted", message) (out of memory; the child is then replaced);
                        ("done", "retire") also replaces the child (it came near its memory limit)

The child sends drafts as soon as they are cut and blocks when the
pipe is full, and the pipeline reads into a bounded queue: memory stays bounded
however large the document. Every limit of ``IngestLimits`` is applied in the
child as before, and the child runs each document under its CPU-time and
address-space limits (RLIMIT_CPU, RLIMIT_AS): a parser that would run for hours
or take gigabytes is stopped by the kernel and the document fails naming the
setting. A file the extractor rejects fails the document with the
extractor's reason; a child that dies (a parser crash, the kernel's OOM killer)
fails it with "the extraction process ended unexpectedly"; a pipeline that stops
early (the document was deleted, the encoder failed) kills its child. A child
whose parent dies sees its pipes close and exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import resource
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

from knowledge.ingestion.drafts import ChunkingOptions, document_drafts
from knowledge.ingestion.limits import (
    IngestLimits,
    LimitExceeded,
    extraction_cpu_exceeded,
    extraction_memory_exceeded,
)
from knowledge.ingestion.reporting import listening
from knowledge.ingestion.titles import document_title
from knowledge.ingestion.types import ChunkDraft, ExtractionError

logger = logging.getLogger(__name__)

# Idle children kept for the next documents (one per thread processing documents at once).
MAX_IDLE = 2
# Drafts per message: few enough that the pipe (64 KiB) bounds how far the child runs ahead.
_BATCH_DRAFTS = 8
_PROJECT_DIR = Path(__file__).resolve().parents[2]
_COMMAND = (sys.executable, "-m", "knowledge.ingestion.extraction_process")
_idle: list[_Child] = []
_idle_lock = threading.Lock()


class ExtractionCrashed(Exception):
    """The extractor raised something other than an ExtractionError (a bug): the child's traceback."""


class ExtractionProcessDied(ExtractionError):
    """The child ended in the middle of a document (killed, crashed in C code, out of memory)."""


class _Child:
    """One extraction process and its two pipes."""

    def __init__(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        self.process = subprocess.Popen(
            _COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=_PROJECT_DIR,
            env=env,
        )

    def send(self, job: dict) -> None:
        pickle.dump(job, self.process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.process.stdin.flush()

    def receive(self, filename: str, limits: IngestLimits) -> tuple[str, object]:
        try:
            return pickle.load(self.process.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            ending = self.ending()
        # The kernel stops a child over its CPU-time limit with SIGXCPU: that is the document's fault.
        if self.process.returncode == -signal.SIGXCPU:
            raise extraction_cpu_exceeded(limits)
        raise ExtractionProcessDied(
            f"{filename} could not be read: the extraction process ended unexpectedly ({ending})"
        )

    def ending(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


class ExtractionRun:
    """One document's extraction in a child: its title, then its drafts as an iterator.

    While the drafts are read, ``stage`` holds what the reader last said it is doing and ``skipped``
    what it had to leave out (reporting.py); the pipeline shows both on the document."""

    def __init__(self, child: _Child, filename: str, limits: IngestLimits) -> None:
        self._child = child
        self._filename = filename
        self._limits = limits
        self.finished = False  # the child reported the end of this document and waits for the next
        self.stage = ""
        self.skipped: list[str] = []

    def title(self) -> str:
        return self._expect("title")

    def drafts(self) -> Iterator[tuple[int, ChunkDraft]]:
        """(section number, draft) as the child cuts them; raises the child's errors when reached."""
        while True:
            kind, value = self._child.receive(self._filename, self._limits)
            if kind == "drafts":
                yield from value
                continue
            if kind == "stage":
                self.stage = value
                continue
            if kind == "skipped":
                self.skipped.append(value)
                continue
            # A child that came near its memory limit is not kept for the next document.
            self.finished = kind == "rejected" or (kind == "done" and value != _RETIRE)
            if kind == "done":
                return
            if kind in ("rejected", "exhausted"):
                raise ExtractionError(value)
            raise _crashed(self._filename, value)

    def stop(self) -> None:
        """Kill the child from another thread (the document was deleted); the reader then sees it end.

        Only the process is killed: its pipes are closed by the thread that reads them."""
        if not self.finished:
            self._child.process.kill()

    def abort(self) -> None:
        """Stop the child mid-document (it would go on cutting a document nobody reads)."""
        if not self.finished:
            self._child.kill()

    def _expect(self, expected: str):
        kind, value = self._child.receive(self._filename, self._limits)
        if kind == expected:
            return value
        self.finished = kind == "rejected"
        if kind in ("rejected", "exhausted"):
            raise ExtractionError(value)
        raise _crashed(self._filename, value)


def _crashed(filename: str, value: tuple[str, str]) -> ExtractionCrashed:
    """The child's exception (its traceback logged here, where the worker's logs are)."""
    summary, details = value
    logger.error("Extracting %s failed in the extraction process:\n%s", filename, details)
    return ExtractionCrashed(summary)


@contextlib.contextmanager
def extraction_run(
    *, filename: str, data: bytes, title: str, options: ChunkingOptions, limits: IngestLimits
) -> Iterator[ExtractionRun]:
    """Extract and chunk ``data`` in a child process; the child is reused only if it finished cleanly."""
    child = _child_take()
    run = ExtractionRun(child, filename, limits)
    try:
        child.send({"filename": filename, "data": data, "title": title, "options": options, "limits": limits})
    except OSError:
        child.kill()
        raise ExtractionProcessDied(
            f"{filename} could not be read: the extraction process ended unexpectedly ({child.ending()})"
        ) from None
    try:
        yield run
    finally:
        if run.finished and child.alive():
            _child_return(child)
        else:
            child.kill()


def _child_take() -> _Child:
    with _idle_lock:
        while _idle:
            child = _idle.pop()
            if child.alive():
                return child
            child.kill()
    return _Child()


def _child_return(child: _Child) -> None:
    with _idle_lock:
        if len(_idle) < MAX_IDLE:
            _idle.append(child)
            return
    child.kill()


def children_stop() -> None:
    """Stop the idle children (they also stop by themselves when this process ends)."""
    with _idle_lock:
        children, _idle[:] = list(_idle), []
    for child in children:
        child.kill()


# -- the child ---------------------------------------------------------------------------


def _serve(jobs, replies) -> None:
    """Answer jobs until the pipeline closes the pipe."""

    def send(reply: tuple[str, object]) -> None:
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()

    warm = False
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        _limit_resources(job["limits"])
        # A reader's reports go out as they are made: "reading page 3 of 40 (OCR)" comes before
        # the seconds that page takes, not with its drafts after them.
        with listening(lambda kind, text: send((kind, text))):
            for reply in _replies(job):
                send(reply)
        if not warm:
            warm = True
            _warm_up()


def _warm_up() -> None:
    """Import every format's parser once the first document is answered (the pipeline is embedding
    it meanwhile), so the first document of another format does not wait for its imports (up to
    0.7 s measured for BeautifulSoup and its regular expressions on a busy machine)."""
    import bs4  # noqa: F401
    import docx  # noqa: F401
    import openpyxl  # noqa: F401
    import pptx  # noqa: F401
    import pypdf  # noqa: F401

    samples = {"warm.html": b"<html><h1>Warm</h1><p>up</p></html>", "warm.md": b"# Warm\n\nup"}
    for filename, data in samples.items():
        with contextlib.suppress(ExtractionError):
            list(
                document_drafts(filename=filename, data=data, title="", options=_WARM, limits=IngestLimits())
            )


_WARM = ChunkingOptions(strategy="paragraph", chunk_size=200, chunk_overlap=0)


def _limit_resources(limits: IngestLimits) -> None:
    """This document's CPU time and address space, enforced by the kernel.

    RLIMIT_CPU counts the process's whole life, so the soft limit is set to the
    time used so far plus the document's allowance; the kernel then stops the
    child with SIGXCPU, even inside C code that never returns to Python. The
    hard limits stay as they are, so the next document can have its own.
    """
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu_limit = int(used.ru_utime + used.ru_stime) + limits.max_extraction_cpu_seconds
    _soft_limit(resource.RLIMIT_CPU, cpu_limit)
    _soft_limit(resource.RLIMIT_AS, limits.max_extraction_memory_bytes)
    _soft_limit(resource.RLIMIT_CORE, 0)  # a child stopped by SIGXCPU leaves no core file behind


def _soft_limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    resource.setrlimit(which, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def _replies(job: dict) -> Iterator[tuple[str, object]]:
    try:
        title = job["title"] or document_title(job["filename"], job["data"])
        yield "title", title
        batch = []
        for item in document_drafts(
            filename=job["filename"],
            data=job["data"],
            title=title,
            options=job["options"],
            limits=job["limits"],
        ):
            batch.append(item)
            if len(batch) >= _BATCH_DRAFTS:
                yield "drafts", batch
                batch = []
        if batch:
            yield "drafts", batch
        yield "done", _RETIRE if _near_memory_limit(job["limits"]) else None
    except Exception as exc:
        yield _failure(exc, job["limits"])


def _failure(exc: Exception, limits: IngestLimits) -> tuple[str, object]:
    """The reply for a document that failed; "exhausted" when it ran into the address-space limit.

    Parsers report a failed allocation in their own ways (lxml: an XML syntax
    error, "unknown error"), so an unexpected failure after the process came
    near its limit is taken for the memory limit, whatever the parser called it
    (a damaged file included: the parser's "unknown error" may be a failed
    allocation). A refusal by one of this product's limits is reported as it is. The pipeline
    replaces a child that answers "exhausted": its heap may be in pieces.
    """
    if isinstance(exc, MemoryError):
        return "exhausted", str(extraction_memory_exceeded(limits))
    if isinstance(exc, LimitExceeded):  # one of this product's own limits: its reason is certain
        return "rejected", str(exc)
    if _near_memory_limit(limits):
        return "exhausted", str(extraction_memory_exceeded(limits))
    if isinstance(exc, ExtractionError):
        return "rejected", str(exc)
    return "crashed", (f"{type(exc).__name__}: {exc}", traceback.format_exc())


# "done" with this value: the document was read, but this child came near its memory limit.
_RETIRE = "retire"
# A failed allocation leaves the peak below the limit by the size it asked for: most of it counts.
_NEAR_LIMIT = 0.75


def _near_memory_limit(limits: IngestLimits) -> bool:
    """Whether this process's peak address space (VmPeak, its whole life) came near the limit."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmPeak:"):
                return int(line.split()[1]) * 1024 >= _NEAR_LIMIT * limits.max_extraction_memory_bytes
    return False


def main() -> None:
    # Ctrl-C in a terminal reaches the whole process group: the pipeline decides when this stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Replies get a private copy of stdout; anything a library prints goes to stderr instead.
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        _serve(sys.stdin.buffer, replies)
    except BrokenPipeError:
        pass  # the pipeline is gone


if __name__ == "__main__":
    main()
