"""Documents, bytes and chunks quotas on every path that stores: page and API uploads,
`manage.py knowledge_ingest`, a folder source's sync, and processing (a new version, a re-index).
Over a quota: 413 with the figures, and nothing stored (no row, no file on disk)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Sum

from config.base.errors import QuotaExceededError
from knowledge.models import Chunk, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_reindex, document_upload
from knowledge.services.sources import SourceSpec, source_add, source_sync, sync_report
from tests.api.conftest import bearer  # noqa: F401 (a fixture)
from tests.quotas.conftest import limit, note

pytestmark = pytest.mark.django_db(transaction=True)


def stored_files() -> set[Path]:
    root = Path(settings.MEDIA_ROOT) / "documents"
    return {path for path in root.rglob("*") if path.is_file()} if root.exists() else set()


@pytest.fixture
def mine(alice):
    return collection_create(name="mine", owner=alice)


def upload(collection, user, index: int):
    name, data = note(index)
    return document_upload(
        collection=collection, uploaded_by=user, upload=DocumentUpload(filename=name, data=data)
    )


def test_the_page_upload_refuses_the_document_over_the_quota(client, alice, mine, no_default_quotas):
    limit(alice, documents=2)
    client.force_login(alice)
    for index in range(2):
        name, data = note(index)
        response = client.post(f"/collections/{mine.pk}/upload/", {"file": SimpleUploadedFile(name, data)})
        assert response.status_code == 302
    files = stored_files()
    name, data = note(2)
    response = client.post(
        f"/collections/{mine.pk}/upload/",
        {"file": SimpleUploadedFile(name, data)},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 413
    assert response.json() == {"error": "document quota reached: 2 of 2 documents used"}
    page = client.post(f"/collections/{mine.pk}/upload/", {"file": SimpleUploadedFile(name, data)})
    assert page.status_code == 413 and b"document quota reached: 2 of 2 documents used" in page.content
    assert Document.objects.filter(uploaded_by=alice).count() == 2
    assert stored_files() == files  # no original written for the refused file


def test_the_api_upload_refuses_bytes_over_the_quota_with_the_figures(bearer, alice, mine, no_default_quotas):  # noqa: F811
    first = upload(mine, alice, 0).document
    limit(alice, bytes=first.size + 100)
    name, data = note(1)
    assert len(data) > 100
    response = bearer(alice).post(
        f"/api/v1/collections/{mine.pk}/documents/",
        {"file": SimpleUploadedFile(name, data)},
        format="multipart",
    )
    assert response.status_code == 413, response.content
    assert response.json() == {
        "error": {
            "status": 413,
            "code": "quota_exceeded",
            "message": f"storage quota reached: {first.size} of {first.size + 100} bytes used; "
            f"{name} needs {len(data)} more",
            "quota": "bytes",
            "limit": first.size + 100,
            "used": first.size,
        }
    }
    assert list(Document.objects.values_list("pk", flat=True)) == [first.pk]


def test_the_same_bytes_again_over_the_quota_are_the_copy_already_stored(alice, mine, no_default_quotas):
    first = upload(mine, alice, 0)
    limit(alice, documents=1)
    again = upload(mine, alice, 0)
    assert (again.created, again.document.pk) == (False, first.document.pk)


def test_knowledge_ingest_reports_the_quota_and_exits_non_zero(alice, tmp_path, no_default_quotas):
    limit(alice, documents=2)
    for index in range(3):
        name, data = note(index)
        (tmp_path / name).write_bytes(data)
    out = _Output()
    with pytest.raises(CommandError) as raised:
        call_command(
            "knowledge_ingest", str(tmp_path), "--collection", "notes", "--create", "--owner", "alice",
            "--wait", stdout=out,
        )  # fmt: skip
    assert raised.value.returncode == 1 and "1 of 3 documents failed" in str(raised.value)
    assert "document quota reached: 2 of 2 documents used" in out.text
    assert Document.objects.filter(uploaded_by=alice).count() == 2


class _Output:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_a_source_sync_fails_the_item_over_the_quota_and_reports_why(alice, tmp_path, settings, mine):
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    settings.KNOWLEDGE_QUOTA_DOCUMENTS = 2  # the default this time, not an override
    folder = tmp_path / "shared"
    folder.mkdir()
    for index in range(3):
        name, data = note(index)
        (folder / name).write_bytes(data)
    source = source_add(
        collection=mine, spec=SourceSpec(location=str(folder), kind="folder"), user=alice, operator=True
    )
    run = source_sync(source=source, trigger="test", wait=True)
    assert (run.status, run.added, run.failed) == ("succeeded", 2, 1), run.errors
    assert sync_report(run)["errors"] == [f"{note(2)[0]}: document quota reached: 2 of 2 documents used"]
    assert Document.objects.filter(uploaded_by=alice).count() == 2


def test_a_document_over_the_chunk_quota_fails_and_stores_none_of_its_chunks(alice, mine, no_default_quotas):
    limit(alice, chunks=1)
    document = upload(mine, alice, 0).document  # processed at once (the tests' tasks run in-process)
    document.refresh_from_db()
    assert document.status == "failed"
    assert document.error.startswith(f"chunk quota reached: 0 of 1 chunks used; {document.filename} needs ")
    assert not Chunk.objects.filter(document=document).exists()


def test_a_new_version_over_the_chunk_quota_fails_and_the_old_one_stays_searchable(
    alice, mine, no_default_quotas
):
    old = upload(mine, alice, 0).document
    kept = Chunk.objects.filter(document=old).count()
    assert kept > 0
    limit(alice, chunks=kept + 1)
    name, _ = note(0)
    longer = note(0)[1] + b"\n\n" + note(1)[1] + b"\n\n" + note(3)[1]
    new = document_upload(
        collection=mine, uploaded_by=alice, upload=DocumentUpload(filename=name, data=longer)
    ).document
    new.refresh_from_db()
    assert new.status == "failed" and f"chunk quota reached: {kept} of {kept + 1} chunks used" in new.error
    assert Document.objects.get(pk=old.pk).status == "ready"  # not retired
    assert Chunk.objects.filter(document=old).count() == kept
    assert not Chunk.objects.filter(document=new).exists()


def test_a_reindex_that_does_not_grow_passes_a_lowered_quota(alice, mine, no_default_quotas):
    document = upload(mine, alice, 0).document
    count = Chunk.objects.filter(document=document).count()
    assert count > 1
    limit(alice, chunks=count - 1)  # lowered below what is stored: nothing new fits, a replacement does
    document_reindex(document=document)
    document.refresh_from_db()
    assert document.status == "ready", document.error
    assert Chunk.objects.filter(document=document).count() == count


def test_a_reindex_that_grows_over_the_quota_keeps_the_document_ready_with_the_reason(
    alice, mine, no_default_quotas
):
    document = upload(mine, alice, 0).document
    before = set(Chunk.objects.filter(document=document).values_list("pk", flat=True))
    limit(alice, chunks=len(before))
    profile = mine.chunk_profile
    profile.chunk_size, profile.chunk_overlap = 300, 50  # smaller chunks: more of them
    profile.save()
    document_reindex(document=document)
    document.refresh_from_db()
    assert document.status == "ready"
    assert document.error.startswith(f"not re-indexed: chunk quota reached: {len(before)} of {len(before)}")
    assert set(Chunk.objects.filter(document=document).values_list("pk", flat=True)) == before


def test_replacing_another_users_version_credits_the_uploader_nothing_of_it(
    alice, bob, mine, no_default_quotas
):
    """Bob (a team writer) replaces Alice's version: its chunks are Alice's, not a credit to Bob."""
    from django.contrib.auth.models import Group

    from knowledge.services.teams import collection_share_set

    team = Group.objects.create(name="writers")
    alice.groups.add(team)
    bob.groups.add(team)
    collection_share_set(collection=mine, user=alice, group=team.pk, can_write=True)
    name, _ = note(0)
    longer = note(0)[1] + b"\n\n" + note(1)[1] + b"\n\n" + note(3)[1]
    elsewhere = collection_create(name="sizing", owner=alice)
    needed = Chunk.objects.filter(
        document=document_upload(
            collection=elsewhere, uploaded_by=alice, upload=DocumentUpload(filename=name, data=longer)
        ).document
    ).count()
    alices = upload(mine, alice, 0).document
    assert 0 < Chunk.objects.filter(document=alices).count() < needed
    limit(bob, chunks=needed - 1)
    new = document_upload(
        collection=mine, uploaded_by=bob, upload=DocumentUpload(filename=name, data=longer)
    ).document
    new.refresh_from_db()
    assert new.status == "failed" and f"chunk quota reached: 0 of {needed - 1} chunks used" in new.error
    assert Document.objects.get(pk=alices.pk).status == "ready"


def test_a_reindex_within_the_quota_replaces_its_own_set(alice, mine, no_default_quotas):
    document = upload(mine, alice, 0).document
    count = Chunk.objects.filter(document=document).count()
    limit(alice, chunks=count)  # exactly full: the new set replaces the old one, so it fits
    document_reindex(document=document)
    document.refresh_from_db()
    assert document.status == "ready", document.error
    assert Chunk.objects.filter(document=document).count() == count


def test_two_uploads_at_the_last_free_place_store_one(alice, mine, no_default_quotas):
    limit(alice, documents=1)
    barrier, outcomes = threading.Barrier(2), []

    def race(index: int) -> None:
        try:
            barrier.wait()
            upload(mine, alice, index)
            outcomes.append("stored")
        except QuotaExceededError as exc:
            outcomes.append(exc.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(index,)) for index in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(map(str, outcomes)) == ["413", "stored"]
    assert Document.objects.filter(uploaded_by=alice).count() == 1


def test_stored_use_counts_processing_failed_and_kept_versions(alice, mine, no_default_quotas):
    upload(mine, alice, 0)
    Document.objects.filter(uploaded_by=alice).update(status="processing")  # still being processed
    limit(alice, documents=1)
    with pytest.raises(QuotaExceededError, match="1 of 1 documents used"):
        upload(mine, alice, 1)
    total = Document.objects.filter(uploaded_by=alice).aggregate(size=Sum("size"))["size"]
    assert total == len(note(0)[1])
