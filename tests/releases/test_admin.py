"""Releases in the admin: the report on each, promote and discard actions, rollback from the
collections list, and the releases on a collection's page."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from accounts.models import AuditEvent
from knowledge.models import ChunkProfile, Collection, Release
from knowledge.services.collections import collection_create, collection_reindex
from knowledge.services.documents import DocumentUpload, document_upload
from tests.releases.conftest import DOCUMENTS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def held(alice):
    collection = collection_create(name="notes", owner=alice)
    path = DOCUMENTS["gravity_hill.md"]
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=300, chunk_overlap=50)
    collection_reindex(collection=collection, chunk_profile=small)
    return Release.objects.get(collection=collection, state="held")


def test_the_operator_reads_the_report_promotes_and_rolls_back_in_the_admin(admin_client, held):
    page = admin_client.get(f"/admin/knowledge/release/{held.pk}/change/").content.decode()
    assert "the gate had nothing to measure" in page and "no question set is linked" in page
    listing = admin_client.get("/admin/knowledge/release/").content.decode()
    assert "nothing to measure" in listing
    collection_page = admin_client.get(f"/admin/knowledge/collection/{held.collection_id}/change/")
    assert f"release {held.pk}" in collection_page.content.decode()

    response = admin_client.post(
        "/admin/knowledge/release/", {"action": "promote", "_selected_action": [held.pk]}, follow=True
    )
    assert f"Release {held.pk} of notes serves now." in response.content.decode()
    collection = Collection.objects.get(pk=held.collection_id)
    assert collection.chunk_profile_id == held.chunk_profile_id
    assert AuditEvent.objects.filter(action="release.promoted", actor_name="admin").exists()

    response = admin_client.post(
        "/admin/knowledge/collection/",
        {"action": "rollback", "_selected_action": [collection.pk]},
        follow=True,
    )
    assert "serves again" in response.content.decode()
    assert Collection.objects.get(pk=collection.pk).chunk_profile_id != held.chunk_profile_id
    response = admin_client.post(
        "/admin/knowledge/release/", {"action": "discard", "_selected_action": [held.pk]}, follow=True
    )
    assert f"Release {held.pk} discarded" in response.content.decode()
    assert Release.objects.get(pk=held.pk).state == "discarded"


def test_promoting_the_serving_release_in_the_admin_says_why_not(admin_client, held):
    serving = Release.objects.get(collection=held.collection, state="serving")
    response = admin_client.post(
        "/admin/knowledge/release/", {"action": "promote", "_selected_action": [serving.pk]}, follow=True
    )
    assert "only a candidate or held one is promoted" in response.content.decode()
    assert admin_client.get("/admin/knowledge/release/add/").status_code == 403


def test_how_a_profile_in_use_cuts_is_fixed_so_a_release_always_says_how_its_chunks_were_cut(
    admin_client, held
):
    small = held.chunk_profile
    page = admin_client.get(f"/admin/knowledge/chunkprofile/{small.pk}/change/").content.decode()
    assert "add a profile and re-index under it" in page
    assert 'name="chunk_size"' not in page and 'name="name"' in page  # shown, not editable
    form = {"name": "small sentences", "strategy": "fixed", "chunk_size": "100", "chunk_overlap": "0"}
    response = admin_client.post(f"/admin/knowledge/chunkprofile/{small.pk}/change/", form)
    assert response.status_code == 302
    small.refresh_from_db()
    assert (small.name, small.strategy, small.chunk_size, small.chunk_overlap) == (
        "small sentences",
        "sentence",
        300,
        50,
    )
    small.chunk_size = 100
    with pytest.raises(ValidationError, match="add a new profile and re-index"):
        small.full_clean()

    unused = ChunkProfile.objects.create(name="unused", strategy="sentence", chunk_size=300, chunk_overlap=50)
    page = admin_client.get(f"/admin/knowledge/chunkprofile/{unused.pk}/change/").content.decode()
    assert 'name="chunk_size"' in page
    form["name"] = "unused"
    assert admin_client.post(f"/admin/knowledge/chunkprofile/{unused.pk}/change/", form).status_code == 302
    unused.refresh_from_db()
    assert (unused.strategy, unused.chunk_size) == ("fixed", 100)
