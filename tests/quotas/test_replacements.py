"""The chunk quota when chunks replace chunks: another user's version replaced, a re-index (which
holds two chunk sets until its switch), and a source's documents charged to the collection's owner."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from knowledge.access import readable_documents
from knowledge.models import Chunk, ChunkProfile, Document
from knowledge.services.collections import collection_create, collection_reindex
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.services.sources import SourceSpec, source_add, source_sync
from knowledge.services.teams import collection_share_set
from tests.api.conftest import bearer  # noqa: F401 (a fixture)
from tests.quotas.conftest import limit, note
from tests.releases.helpers import held_promoted

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shared(alice, bob):
    """Alice's collection, shared for writing with a team Bob is in."""
    team = Group.objects.create(name="writers")
    alice.groups.add(team)
    bob.groups.add(team)
    collection = collection_create(name="handbooks", owner=alice)
    collection_share_set(collection=collection, user=alice, group=team.pk, can_write=True)
    return collection


def upload(collection, user, name: str, data: bytes) -> Document:
    document = document_upload(
        collection=collection, uploaded_by=user, upload=DocumentUpload(filename=name, data=data)
    ).document
    document.refresh_from_db()
    return document


def longer_note() -> bytes:
    return note(0)[1] + b"\n\n" + note(1)[1] + b"\n\n" + note(3)[1]


def test_replacing_another_users_version_charges_the_whole_new_set(
    alice, bob, charlie, shared, no_default_quotas
):
    name = note(0)[0]
    old = upload(shared, alice, name, note(0)[1])
    old_chunks = Chunk.objects.filter(document=old).count()
    scratch = collection_create(name="scratch", owner=charlie)
    new_chunks = Chunk.objects.filter(document=upload(scratch, charlie, name, longer_note())).count()
    assert new_chunks > old_chunks > 0
    # Were Alice's chunks credited to Bob, 0 - old + new would fit this limit.
    limit(bob, chunks=new_chunks - old_chunks)
    new = upload(shared, bob, name, longer_note())
    assert new.status == "failed"
    assert new.error.startswith(f"chunk quota reached: 0 of {new_chunks - old_chunks} chunks used")
    assert Document.objects.get(pk=old.pk).status == "ready"  # Alice's version stays
    assert not Chunk.objects.filter(document__uploaded_by=bob).exists()


def test_replacing_ones_own_version_is_charged_net(alice, shared, no_default_quotas):
    name = note(0)[0]
    old = upload(shared, alice, name, note(0)[1])
    limit(alice, chunks=Chunk.objects.filter(document=old).count())  # full
    new = upload(shared, alice, name, note(0)[1] + b"\n\nOne more closing line.")
    assert new.status == "ready", new.error
    assert not Document.objects.filter(pk=old.pk).exists()


def same_sized_profile(collection) -> ChunkProfile:
    current = collection.chunk_profile
    return ChunkProfile.objects.create(
        name="same size",
        strategy=current.strategy,
        chunk_size=current.chunk_size,
        chunk_overlap=current.chunk_overlap,
    )


def test_a_collection_reindex_at_the_limit_with_as_many_chunks_completes(alice, shared, no_default_quotas):
    documents = [upload(shared, alice, *note(index)) for index in (0, 1)]
    used = Chunk.objects.filter(document__in=documents).count()
    limit(alice, chunks=used)  # full: the new sets replace the current ones at the switch
    profile = same_sized_profile(shared)
    collection_reindex(collection=shared, chunk_profile=profile)
    held_promoted(shared)
    assert (shared.chunk_profile, shared.pending_chunk_profile, shared.reindex_error) == (profile, None, "")
    assert Chunk.objects.filter(document__in=documents, chunk_profile=profile).count() == used
    assert all(Document.objects.get(pk=d.pk).status == "ready" for d in documents)


def test_a_reindex_that_grows_past_the_limit_stops_and_says_why(
    client,
    bearer,  # noqa: F811
    alice,
    bob,
    shared,
    no_default_quotas,  # noqa: F811
):
    kept = upload(shared, alice, *note(0))
    grower = upload(shared, bob, *note(1))
    current = shared.chunk_profile
    serving = set(Chunk.objects.filter(document=grower).values_list("pk", flat=True))
    limit(bob, chunks=len(serving))  # full; smaller chunks make more of them
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)
    collection_reindex(collection=shared, chunk_profile=small)

    grower.refresh_from_db()
    assert grower.status == "ready"  # still serving its current chunks
    assert grower.error.startswith(f"not re-indexed: chunk quota reached: {len(serving)} of {len(serving)}")
    assert set(Chunk.objects.filter(document=grower).values_list("pk", flat=True)) == serving
    assert readable_documents(user=bob).filter(pk=grower.pk).exists()
    shared.refresh_from_db()
    # Not left pending for ever: the collection keeps its current profile and says why.
    assert (shared.chunk_profile, shared.pending_chunk_profile) == (current, None)
    assert shared.reindex_error.startswith(
        f"re-index to small stopped: {grower.filename}: chunk quota reached"
    )
    assert not Chunk.objects.filter(collection=shared, chunk_profile=small).exists()  # no half set kept
    assert Document.objects.get(pk=kept.pk).status == "ready"

    client.force_login(alice)
    page = client.get(f"/collections/{shared.pk}/").content.decode()
    assert "re-index to small stopped" in page
    body = bearer(alice).get(f"/api/v1/collections/{shared.pk}/").json()
    assert body["reindex_error"] == shared.reindex_error

    limit_row = bob.quota
    limit_row.chunks = None  # raised: the re-index asked again completes and clears the reason
    limit_row.save()
    collection_reindex(collection=shared, chunk_profile=small)
    held_promoted(shared)
    assert (shared.chunk_profile, shared.reindex_error) == (small, "")
    grower.refresh_from_db()
    assert (grower.status, grower.error) == ("ready", "")


def test_a_source_sync_is_charged_to_the_collections_owner(alice, bob, shared, tmp_path, settings):
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    folder = tmp_path / "team-folder"
    folder.mkdir()
    name, data = note(0)
    (folder / name).write_bytes(data)
    source = source_add(
        collection=shared, spec=SourceSpec(location=str(folder), kind="folder"), user=bob, operator=True
    )
    run = source_sync(source=source, trigger="test", wait=True)
    assert (run.status, run.added) == ("succeeded", 1), run.errors
    assert Document.objects.get(collection=shared).uploaded_by == alice
    assert not Document.objects.filter(uploaded_by=bob).exists()
