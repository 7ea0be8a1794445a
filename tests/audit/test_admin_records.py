"""What the admin records beyond the object's own form: its inline rows; nothing when nothing was stored."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import AuditEvent
from knowledge.models import Profile, ProfileCollection
from knowledge.services.collections import collection_create
from tests.admin.test_content import _profile_change_form
from tests.audit.conftest import only_event

pytestmark = pytest.mark.django_db


def test_a_profiles_collections_changed_in_its_inline_are_in_the_profiles_event(admin_as, operator, alice):
    notes = collection_create(name="Notes", owner=alice)
    profile = Profile.objects.create(owner=alice, name="alice's", tag="alices")
    url = f"/admin/knowledge/profile/{profile.pk}/change/"
    response = admin_as.post(url, _profile_change_form(profile, notes))
    assert response.status_code == 302, response.content.decode()[:2000]
    row = ProfileCollection.objects.get(profile=profile)
    event = only_event("admin.changed", object_id=str(profile.pk))
    assert (event.actor, event.channel, event.object_type) == (operator, "admin", "knowledge.profile")
    assert event.changes == {f"profile collection {row}": [None, {"collection": notes.pk}]}

    form = _profile_change_form(profile, notes)
    form.update(
        {
            "profile_collections-INITIAL_FORMS": "1",
            "profile_collections-0-id": str(row.pk),
            "profile_collections-0-DELETE": "on",
        }
    )
    assert admin_as.post(url, form).status_code == 302
    assert not ProfileCollection.objects.filter(profile=profile).exists()
    removed = AuditEvent.objects.filter(action="admin.changed", object_id=str(profile.pk)).latest("pk")
    [(name, (before, after))] = removed.changes.items()
    assert (name, before["collection"], after) == (f"profile collection {row}", notes.pk, None)


def test_an_admin_upload_of_bytes_already_stored_records_nothing(admin_as, alice, corpus):
    notes = collection_create(name="Notes", owner=alice)
    data = (corpus / "text" / "gravity_hill.md").read_bytes()

    def upload():
        form = {"collection": notes.pk, "upload": SimpleUploadedFile("gravity_hill.md", data), "tags": ""}
        return admin_as.post("/admin/knowledge/document/add/", form)

    uploads = AuditEvent.objects.filter(action="document.uploaded")
    before = uploads.count()  # other tests' session-wide data may hold uploads of their own
    assert upload().status_code == 302
    assert upload().status_code == 302  # "These bytes were already in the collection."
    assert uploads.count() == before + 1


def test_a_secret_in_a_rows_fields_is_recorded_as_changed(alice):
    from accounts.audit import CHANGED, audit_record

    event = audit_record(
        action="admin.changed",
        obj=alice,
        changes={"row one": [None, {"api_key": "sk-live-123", "name": "x"}]},
    )
    event.refresh_from_db()
    assert event.changes == {"row one": [None, {"api_key": CHANGED, "name": "x"}]}


def test_a_model_change_is_the_re_index_record_alone_beside_an_owner_change(admin_as, alice, bob):
    """One record per change: the re-embed records the model, the admin's collection.changed the rest."""
    from tests.admin.test_content import _collection_change_form

    notes = collection_create(name="Notes", owner=alice)
    e5 = "intfloat/multilingual-e5-small"
    url = f"/admin/knowledge/collection/{notes.pk}/change/"
    response = admin_as.post(url, _collection_change_form(notes, embedding_model=e5, owner=bob.pk))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert only_event("collection.reindexed", object_id=str(notes.pk)).changes["embedding_model"][1] == e5
    assert only_event("collection.changed", object_id=str(notes.pk)).changes == {"owner": [alice.pk, bob.pk]}
