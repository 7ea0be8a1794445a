"""A Git source's mirror on the server's disk is storage too: counted in the collection owner's
bytes, and a sync whose mirror would go over what is left of the quota is refused, leaving nothing
on disk. Real repositories made with `git`, real database."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowledge.models import Source
from knowledge.quotas import quota_usage_for, quota_usage_report
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_sync
from tests.quotas.conftest import limit
from tests.sources.test_git_and_folder_sync import git

pytestmark = pytest.mark.django_db(transaction=True)

# Not matched by the source's patterns: the mirror holds it, no document is made of it.
BLOB_BYTES = 600_000


@pytest.fixture
def repo(tmp_path, settings) -> Path:
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    settings.KNOWLEDGE_SOURCES_DIR = tmp_path / "mirrors"
    path = tmp_path / "handbook"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "data.bin").write_bytes(os.urandom(BLOB_BYTES))  # random: it does not compress
    (path / "README.md").write_bytes(b"# Handbook\n\nHow the team works, in short.\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def disk_bytes(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def follow(repo: Path, owner) -> Source:
    collection = collection_create(name="handbook", owner=owner)
    return source_add(
        collection=collection,
        spec=SourceSpec(location=str(repo), kind="git", options={"globs": ["*.md"]}),
        user=owner,
        operator=True,
    )


def test_a_mirror_counts_in_its_owners_storage(repo, alice, settings, no_default_quotas):
    source = follow(repo, alice)
    documents_only = quota_usage_for(user_id=alice.pk)["bytes"]
    assert documents_only == 0

    run = source_sync(source=source, trigger="test")

    assert run.status == "succeeded", run.error
    mirror = Path(settings.KNOWLEDGE_SOURCES_DIR) / str(source.pk)
    document_bytes = source.collection.documents.get().size
    source.refresh_from_db()
    assert source.disk_bytes == disk_bytes(mirror) > BLOB_BYTES
    assert quota_usage_for(user_id=alice.pk)["bytes"] == document_bytes + source.disk_bytes
    assert quota_usage_report(user=alice)["bytes"]["used"] == document_bytes + source.disk_bytes


def test_a_sync_whose_mirror_would_go_over_the_quota_is_refused_and_leaves_nothing(
    repo, alice, settings, no_default_quotas
):
    limit(alice, bytes=BLOB_BYTES // 2)
    source = follow(repo, alice)

    run = source_sync(source=source, trigger="test")

    assert run.status == "failed"
    assert "storage quota reached" in run.error and f"{BLOB_BYTES // 2} bytes" in run.error, run.error
    assert not source.collection.documents.exists()
    mirrors = Path(settings.KNOWLEDGE_SOURCES_DIR)
    assert not mirrors.exists() or disk_bytes(mirrors) == 0
    source.refresh_from_db()
    assert source.disk_bytes == 0
    assert quota_usage_for(user_id=alice.pk)["bytes"] == 0
