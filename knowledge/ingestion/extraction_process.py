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
                        small batches, then ("done", None) | ("rejected", message) | ("crashed", text)

The child sends drafts as soon as they are cut and blocks when the
pipe is full, and the pipeline reads into a bounded queue: memory stays bounded
however large the document. Every limit of ``IngestLimits`` is applied in the
child as before. A file the extractor rejects fails the document with the
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
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

from knowledge.ingestion.drafts import ChunkingOptions, document_drafts
from knowledge.ingestion.limits import IngestLimits
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

    def receive(self, filename: str) -> tuple[str, object]:
        try:
            return pickle.load(self.process.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            raise ExtractionProcessDied(
                f"{filename} could not be read: the extraction process ended unexpectedly ({self.ending()})"
            ) from None

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
    """One document's extraction in a child: its title, then its drafts as an iterator."""

    def __init__(self, child: _Child, filename: str) -> None:
        self._child = child
        self._filename = filename
        self.finished = False  # the child reported the end of this document and waits for the next

    def title(self) -> str:
        return self._expect("title")

    def drafts(self) -> Iterator[tuple[int, ChunkDraft]]:
        """(section number, draft) as the child cuts them; raises the child's errors when reached."""
        while True:
            kind, value = self._child.receive(self._filename)
            if kind == "drafts":
                yield from value
                continue
            self.finished = kind in ("done", "rejected")
            if kind == "done":
                return
            if kind == "rejected":
                raise ExtractionError(value)
            raise _crashed(self._filename, value)

    def abort(self) -> None:
        """Stop the child mid-document (it would go on cutting a document nobody reads)."""
        if not self.finished:
            self._child.kill()

    def _expect(self, expected: str):
        kind, value = self._child.receive(self._filename)
        if kind == expected:
            return value
        self.finished = kind == "rejected"
        if kind == "rejected":
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
    run = ExtractionRun(child, filename)
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
    warm = False
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        for reply in _replies(job):
            pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
            replies.flush()
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
        yield "done", None
    except ExtractionError as exc:
        yield "rejected", str(exc)
    except Exception as exc:
        yield "crashed", (f"{type(exc).__name__}: {exc}", traceback.format_exc())


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
