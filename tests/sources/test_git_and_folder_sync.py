"""A Git repository and a server folder as sources: real `git` repositories made by the test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from config.base.errors import KnowledgeError
from knowledge.models import Document, SourceItem
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_sync
from tests.conftest import CORPUS

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = {
    "docs/gravity_hill.md": (CORPUS / "text" / "gravity_hill.md").read_bytes(),
    "docs/guide/queries.md": (CORPUS / "django-docs" / "topics" / "db" / "queries.txt").read_bytes()[:6000],
    "docs/glossary.md": (CORPUS / "django-docs" / "glossary.txt").read_bytes(),
    "src/app.py": b"print('not documentation')\n",
}


def git(repo: Path, *args: str) -> str:
    names = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    names |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    env = {**names, "HOME": str(repo.parent), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path, settings):
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    settings.KNOWLEDGE_SOURCES_DIR = tmp_path / "mirrors"
    path = tmp_path / "handbook"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for name, data in DOCS.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def test_a_repository_syncs_by_its_commits_and_citations_carry_the_commit(repo, alice):
    collection = collection_create(name="handbook", owner=alice)
    source = source_add(
        collection=collection,
        spec=SourceSpec(
            location=str(repo), kind="git", options={"branch": "main", "globs": ["docs/**/*.md"]}
        ),
        user=alice,
        operator=True,
    )
    first = source_sync(source=source, trigger="test", wait=True)
    assert first.status == "succeeded", first.error
    assert (first.added, first.failed) == (3, 0), first.errors
    commit = git(repo, "rev-parse", "HEAD").strip()
    item = SourceItem.objects.get(source=source, key="docs/glossary.md")
    assert commit in item.document.origin_url and item.document.origin_url.endswith("docs/glossary.md")

    (repo / "docs" / "glossary.md").write_bytes(
        DOCS["docs/glossary.md"] + b"\n\nsync\n    Keeping a copy current.\n"
    )
    git(repo, "commit", "-q", "-am", "second")
    second = source_sync(source=source, trigger="test", wait=True)
    assert (second.added, second.updated, second.unchanged, second.deleted) == (0, 1, 2, 0), second.errors
    new_commit = git(repo, "rev-parse", "HEAD").strip()
    document = SourceItem.objects.get(source=source, key="docs/glossary.md").document
    assert document.status == Document.Status.READY and new_commit in document.origin_url
    assert second.chunks_embedded == document.chunks.count()

    third = source_sync(source=source, trigger="test", wait=True)
    assert (third.updated, third.unchanged, third.chunks_embedded) == (0, 3, 0)


def test_local_repositories_and_folders_outside_the_allowed_roots_are_refused(tmp_path, settings, alice):
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = []
    collection = collection_create(name="refused", owner=alice)
    with pytest.raises(KnowledgeError, match="only operators may follow a local repository"):
        source_add(collection=collection, spec=SourceSpec(location=str(tmp_path), kind="git"), user=alice)
    with pytest.raises(KnowledgeError, match="KNOWLEDGE_SOURCES_FOLDER_ROOTS"):
        source_add(
            collection=collection,
            spec=SourceSpec(location=str(tmp_path), kind="git"),
            user=alice,
            operator=True,
        )
    with pytest.raises(KnowledgeError, match="KNOWLEDGE_SOURCES_FOLDER_ROOTS"):
        source_add(
            collection=collection,
            spec=SourceSpec(location="file:///etc", kind="git"),
            user=alice,
            operator=True,
        )
    with pytest.raises(KnowledgeError, match="only operators"):
        source_add(collection=collection, spec=SourceSpec(location=str(tmp_path), kind="folder"), user=alice)
    with pytest.raises(KnowledgeError, match="KNOWLEDGE_SOURCES_FOLDER_ROOTS"):
        source_add(
            collection=collection, spec=SourceSpec(location="/etc", kind="folder"), user=alice, operator=True
        )


def test_a_folder_syncs_by_modification_time_then_content(tmp_path, settings, alice):
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    folder = tmp_path / "shared"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "gravity_hill.md").write_bytes(DOCS["docs/gravity_hill.md"])
    (folder / "glossary.md").write_bytes(DOCS["docs/glossary.md"])
    collection = collection_create(name="folder", owner=alice)
    source = source_add(
        collection=collection,
        spec=SourceSpec(location=str(folder), kind="folder", options={"globs": ["**/*.md"]}, grace_hours=0),
        user=alice,
        operator=True,
    )
    first = source_sync(source=source, trigger="test", wait=True)
    assert (first.added, first.failed) == (2, 0), first.errors
    (folder / "glossary.md").unlink()
    second = source_sync(source=source, trigger="test", wait=True)
    assert (second.unchanged, second.deleted, second.chunks_embedded) == (1, 1, 0)
    assert not Document.objects.filter(collection=collection, filename__startswith="glossary").exists()


def test_a_file_gone_from_the_branch_stays_gone_through_its_grace_period(repo, alice):
    collection = collection_create(name="grace", owner=alice)
    source = source_add(
        collection=collection,
        spec=SourceSpec(location=str(repo), kind="git", options={"globs": ["docs/**/*.md"]}, grace_hours=1),
        user=alice,
        operator=True,
    )
    source_sync(source=source, trigger="test", wait=True)
    git(repo, "rm", "-q", "docs/glossary.md")
    git(repo, "commit", "-q", "-m", "drop the glossary")
    for _ in range(2):  # the commit that removed it, then nothing new: gone both times, kept meanwhile
        run = source_sync(source=source, trigger="test", wait=True)
        item = SourceItem.objects.get(source=source, key="docs/glossary.md")
        assert item.gone_since is not None and item.document is not None, run.errors
        assert run.deleted == 0
    source.grace_hours = 0
    source.save()
    assert source_sync(source=source, trigger="test", wait=True).deleted == 1
    assert not SourceItem.objects.filter(source=source, key="docs/glossary.md").exists()


def test_a_users_own_upload_of_the_same_bytes_is_never_removed_by_a_source(tmp_path, settings, alice):
    from knowledge.services.documents import DocumentUpload, document_upload

    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "glossary.md").write_bytes(DOCS["docs/glossary.md"])
    collection = collection_create(name="mixed", owner=alice)
    own = document_upload(
        collection=collection,
        sync=True,
        upload=DocumentUpload(filename="glossary.md", data=DOCS["docs/glossary.md"]),
    )
    source = source_add(
        collection=collection,
        spec=SourceSpec(location=str(folder), kind="folder", grace_hours=0),
        user=alice,
        operator=True,
    )
    assert (
        source_sync(source=source, trigger="test", wait=True).added == 1
    )  # the same bytes: the same document
    (folder / "glossary.md").unlink()
    assert source_sync(source=source, trigger="test", wait=True).deleted == 1
    assert Document.objects.filter(pk=own.document.pk).exists()
