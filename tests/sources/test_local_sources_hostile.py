"""A server folder or a Git repository a collection follows, turned against the server: a named pipe
that would block the worker, a hard link to a file outside the allowed root, file names that hide
what they are, and a mirror that grows on disk. Real folders, real `git`, real database."""

from __future__ import annotations

import os
import threading
import unicodedata
from pathlib import Path

import pytest
from django.db import connections

from knowledge.models import Document, Source, SourceItem
from knowledge.services.collections import collection_create, collection_delete
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.services.sources import SourceSpec, source_add, source_delete, source_sync
from knowledge.source_fetch.readers import FolderReader, preview_items
from tests.conftest import CORPUS
from tests.sources.test_git_and_folder_sync import git

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

NOTE = (CORPUS / "text" / "gravity_hill.md").read_bytes()
# Long enough for a sync of one small file on a loaded machine; a blocked open never ends at all.
BLOCKED_AFTER_S = 120


@pytest.fixture
def root(tmp_path, settings) -> Path:
    """The folder the operator allows; tmp_path itself (the "outside") is not under it."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [allowed.resolve()]
    settings.KNOWLEDGE_SOURCES_DIR = tmp_path / "mirrors"
    return allowed


def folder_source(alice, folder: Path, name: str = "shared") -> Source:
    collection = collection_create(name=name, owner=alice)
    return source_add(
        collection=collection, spec=SourceSpec(location=str(folder), kind="folder"), user=alice, operator=True
    )


def blocked_on(fifo: Path, work) -> tuple[bool, object]:
    """Run ``work`` in a thread given BLOCKED_AFTER_S to end: whether it was blocked still (a read
    waiting on the pipe for good fails the test instead of hanging it), and what it returned."""
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = work()
        finally:
            connections.close_all()  # the thread's own database connection

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BLOCKED_AFTER_S)
    blocked = thread.is_alive()
    if blocked:  # a writer opens the pipe and goes: the read blocked in open() gets nothing and ends
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # blocked elsewhere than on the pipe
        thread.join(BLOCKED_AFTER_S)
    return blocked, outcome.get("result")


def test_a_named_pipe_in_a_folder_is_refused_with_its_reason_and_the_sync_goes_on(root, alice):
    folder = root / "shared"
    folder.mkdir()
    (folder / "note.md").write_bytes(NOTE)
    os.mkfifo(folder / "pipe.md")
    source = folder_source(alice, folder)

    blocked, run = blocked_on(folder / "pipe.md", lambda: source_sync(source=source, trigger="test"))

    assert not blocked, "the sync is blocked opening the named pipe"
    assert run.status == "succeeded" and run.added == 1, run.errors
    assert run.errors == [{"item": "pipe.md", "reason": "not a regular file (a named pipe); it was not read"}]
    assert preview_items(source) == (["note.md"], "")  # a preview lists what a sync reads


def test_a_file_swapped_for_a_named_pipe_after_the_listing_is_not_waited_for(root, alice):
    folder = root / "shared"
    folder.mkdir()
    source = folder_source(alice, folder)
    reader = FolderReader(source, {})
    os.mkfifo(folder / "swapped.md")  # as if swapped in between the folder's listing and the read

    blocked, listed = blocked_on(folder / "swapped.md", lambda: reader._listed(folder / "swapped.md"))

    assert not blocked, "the read is blocked opening the named pipe"
    assert listed.error == "not a regular file (a named pipe); it was not read" and listed.data is None


def test_a_hard_link_to_a_file_outside_the_root_is_not_read(root, alice, tmp_path):
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_bytes(b"# Payroll\n\nThe secret outside the allowed folder.\n")
    folder = root / "shared"
    folder.mkdir()
    os.link(secret, folder / "linked.md")  # same file system: tmp_path holds both
    source = folder_source(alice, folder)

    run = source_sync(source=source, trigger="test")

    assert (run.added, run.failed) == (0, 1), run.errors
    assert "hard link" in run.errors[0]["reason"]
    assert not Document.objects.filter(collection=source.collection).exists()


# Characters a file name may carry to mislead whoever reads it: the right-to-left override (the name
# displays reversed from there on) and the escape that starts a terminal control sequence.
MISLEADING = ("\u202e", "\x1b")


def shown_badly(name: str) -> list[str]:
    return [ch for ch in name if ch in MISLEADING or unicodedata.category(ch) == "Cc"]


def test_git_file_names_lose_the_characters_an_upload_loses(root, alice):
    repo = root / "handbook"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    hostile = "read\u202edm.exe\x1b[2J.md"
    (repo / hostile).write_bytes(NOTE)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    collection = collection_create(name="handbook", owner=alice)
    source = source_add(
        collection=collection,
        spec=SourceSpec(location=str(repo), kind="git", options={"globs": ["*.md"]}),
        user=alice,
        operator=True,
    )

    run = source_sync(source=source, trigger="test")

    assert run.added == 1, run.errors
    document = SourceItem.objects.get(source=source, key=hostile).document
    assert shown_badly(document.filename) == [] and document.filename.startswith("readdm.exe[2J ~")
    uploaded = document_upload(
        collection=collection_create(name="uploads", owner=alice),
        upload=DocumentUpload(filename=hostile, data=NOTE + b"\nAnother copy.\n"),
    ).document
    assert uploaded.filename == "readdm.exe[2J.md"


def git_source(alice, root: Path, name: str = "handbook") -> Source:
    repo = root / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "note.md").write_bytes(NOTE)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    collection = collection_create(name=name, owner=alice)
    return source_add(
        collection=collection, spec=SourceSpec(location=str(repo), kind="git"), user=alice, operator=True
    )


def test_removing_a_source_or_its_collection_removes_its_mirror(root, alice, settings):
    kept, removed = git_source(alice, root, "kept"), git_source(alice, root, "removed")
    gone_with_collection = git_source(alice, root, "collection")
    for source in (kept, removed, gone_with_collection):
        assert source_sync(source=source, trigger="test").status == "succeeded"
    mirrors = Path(settings.KNOWLEDGE_SOURCES_DIR)

    source_delete(source=removed)
    collection_delete(collection=gone_with_collection.collection)

    assert sorted(path.name for path in mirrors.iterdir()) == [str(kept.pk)]
