"""Collections, share links, subscriptions, documents, sources and settings: one record per event,
whether done on a page, through the API or in the admin."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from accounts.models import AuditEvent
from knowledge.models import Collection, Document, KnowledgeSetting, LLMSettings, Subscription
from knowledge.parameter_values import global_setting_set
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.audit.conftest import only_event

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(alice):
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    return client


def test_collection_created_changed_deleted_on_page_and_api(page, bearer, alice):
    page.post("/collections/", {"name": "Notes", "visibility": "private"})
    notes = Collection.objects.get(name="Notes")
    created = only_event("collection.created", object_id=str(notes.pk))
    assert (created.actor, created.channel, created.changes["name"]) == (alice, "page", [None, "Notes"])

    api = bearer(alice)
    response = api.patch(
        f"/api/v1/collections/{notes.pk}/", {"visibility": "public", "description": "d"}, format="json"
    )
    assert response.status_code == 200, response.content
    changed = only_event("collection.changed", object_id=str(notes.pk))
    assert changed.channel == "api"
    assert changed.changes == {"visibility": ["private", "public"], "description": ["", "d"]}

    assert api.delete(f"/api/v1/collections/{notes.pk}/").status_code == 204
    deleted = only_event("collection.deleted", object_id=str(notes.pk))
    assert (deleted.object_repr, deleted.actor) == ("Notes", alice)


def test_collection_changed_in_the_admin_with_before_and_after(admin_as, operator, alice):
    notes = collection_create(name="Notes", owner=alice)
    url = f"/admin/knowledge/collection/{notes.pk}/change/"
    form = admin_as.get(url).context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None}
    data.update(name="Notes", owner=alice.pk, visibility="unlisted", description="", tags="[]")
    data.update({"shares-TOTAL_FORMS": "0", "shares-INITIAL_FORMS": "0"})  # the team shares inline, empty
    data.pop("chunk_profile", None)
    response = admin_as.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    event = only_event("collection.changed", object_id=str(notes.pk))
    assert (event.actor, event.channel, event.changes["visibility"]) == (
        operator,
        "admin",
        ["private", "unlisted"],
    )
    assert not AuditEvent.objects.filter(action__startswith="admin.").exists()


def test_share_link_opened_and_rotated(bearer, alice, bob):
    shared = collection_create(name="Shared", owner=alice, visibility="unlisted")
    as_bob = bearer(bob)
    assert as_bob.post(f"/api/v1/collections/link/{shared.share_token}/").status_code == 200
    as_bob.post(f"/api/v1/collections/link/{shared.share_token}/")  # held already: nothing new
    opened = only_event("share_link.opened", object_id=str(shared.pk))
    assert opened.actor == bob
    old_token = shared.share_token
    assert bearer(alice).post(f"/api/v1/collections/{shared.pk}/share-link/").status_code == 200
    rotated = only_event("share_link.rotated", object_id=str(shared.pk))
    assert rotated.changes["share_token"] == ["(changed)", "(changed)"]
    assert rotated.changes["grants_dropped"] == [1, 0]
    assert old_token not in str(rotated.changes)


def test_subscription_created_revoked_reinstated(bearer, alice, bob, admin_as, operator):
    listed = collection_create(name="Listed", owner=alice, visibility="public")
    listed.listed = True
    listed.save()
    assert bearer(bob).post(f"/api/v1/collections/{listed.pk}/subscribe/").status_code in (200, 201)
    subscription = Subscription.objects.get(user=bob, collection=listed)
    assert only_event("subscription.created", object_id=str(subscription.pk)).actor == bob
    path = f"/api/v1/collections/{listed.pk}/subscriptions/{subscription.pk}/"
    assert bearer(alice).delete(path).status_code in (200, 204)
    assert only_event("subscription.revoked").actor == alice
    admin_as.post(
        "/admin/knowledge/subscription/", {"action": "reinstate", "_selected_action": [subscription.pk]}
    )
    event = only_event("subscription.reinstated", object_id=str(subscription.pk))
    assert (event.actor, event.channel) == (operator, "admin")


def test_unlisting_ends_each_subscription_with_its_own_event(bearer, alice, bob, charlie):
    listed = collection_create(name="Listed", owner=alice, visibility="public")
    listed.listed = True
    listed.save()
    for user in (bob, charlie):
        assert bearer(user).post(f"/api/v1/collections/{listed.pk}/subscribe/").status_code in (200, 201)
    response = bearer(alice).patch(f"/api/v1/collections/{listed.pk}/", {"listed": False}, format="json")
    assert response.status_code == 200, response.content
    ended = AuditEvent.objects.filter(action="subscription.ended").order_by("pk")
    assert sorted(e.object_id for e in ended) == sorted(
        str(pk) for pk in Subscription.objects.filter(collection=listed).values_list("pk", flat=True)
    )
    assert {(e.actor, e.channel) for e in ended} == {(alice, "api")}


def test_document_uploaded_reindexed_deleted(page, bearer, alice, corpus, admin_as, operator):
    notes = collection_create(name="Notes", owner=alice)
    path = corpus / "office" / "dummy.docx"
    upload = SimpleUploadedFile(path.name, path.read_bytes())
    response = bearer(alice).post(
        f"/api/v1/collections/{notes.pk}/documents/", {"file": upload}, format="multipart"
    )
    assert response.status_code == 201, response.content
    document = Document.objects.get(collection=notes)
    uploaded = only_event("document.uploaded", object_id=str(document.pk))
    assert (uploaded.actor, uploaded.channel, uploaded.changes["filename"]) == (
        alice,
        "api",
        [None, path.name],
    )

    admin_as.post(
        "/admin/knowledge/document/", {"action": "reindex_documents", "_selected_action": [document.pk]}
    )
    assert only_event("document.reindexed", object_id=str(document.pk)).actor == operator

    # The admin's bulk delete calls the service: its record stands, the admin adds none.
    response = admin_as.post(
        "/admin/knowledge/document/",
        {"action": "delete_selected", "_selected_action": [document.pk], "post": "yes"},
    )
    assert response.status_code == 302
    deleted = only_event("document.deleted", object_id=str(document.pk))
    assert (deleted.actor, deleted.channel) == (operator, "admin")
    assert not AuditEvent.objects.filter(action__startswith="admin.").exists()


def test_document_upload_rolled_back_leaves_no_record(alice, corpus):
    from django.db import transaction

    notes = collection_create(name="Notes", owner=alice)
    path = corpus / "office" / "dummy.docx"
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    with pytest.raises(RuntimeError), transaction.atomic():
        document_upload(
            collection=notes,
            uploaded_by=alice,
            upload=DocumentUpload(filename=path.name, data=path.read_bytes()),
        )
        raise RuntimeError("the caller's transaction fails after the upload")
    assert not AuditEvent.objects.exclude(pk__in=before).filter(action="document.uploaded").exists()


def test_setting_changed_and_locked_through_the_admin_and_the_service(admin_as, operator):
    global_setting_set(key="maxDocs", value=5)
    assert only_event("setting.changed").channel == "worker"  # no request, no command: a task's door
    row = KnowledgeSetting.objects.get(key="maxDocs")
    url = f"/admin/knowledge/knowledgesetting/{row.pk}/change/"
    assert admin_as.post(url, {"value": "7", "is_locked": "on"}).status_code == 302
    event = only_event("setting.changed", actor=operator)
    assert event.changes == {"value": [5, 7], "is_locked": [False, True]}
    assert admin_as.post(url, {"value": "7"}).status_code == 302
    assert only_event("setting.locked").changes == {"is_locked": [True, False]}
    assert not AuditEvent.objects.filter(action__startswith="admin.").exists()


def test_llm_settings_changed_in_the_admin_never_stores_the_key(admin_as, operator):
    data = {"enabled": "on", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "sk-TOPSECRET-1"}
    data.update(timeout_seconds="30", max_retries="1", temperature="0.1", max_output_tokens="100")
    response = admin_as.post("/admin/knowledge/llmsettings/add/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    row = LLMSettings.objects.get()
    added = only_event("llm_settings.added", object_id=str(row.pk))
    assert added.changes["api_key"] == ["(changed)", "(changed)"] and added.actor == operator
    data.update(model="other", api_key="")
    admin_as.post(f"/admin/knowledge/llmsettings/{row.pk}/change/", data)
    changed = only_event("llm_settings.changed")
    assert changed.changes == {"model": ["m", "other"]}  # the key was kept, so it is not a change
    assert "TOPSECRET" not in str(list(AuditEvent.objects.values()))


def test_collection_reindexed_and_share_link_rotated_on_the_page(page, alice):
    from knowledge.models import ChunkProfile

    notes = collection_create(name="Notes", owner=alice, visibility="unlisted")
    other = ChunkProfile.objects.create(name="small", strategy="paragraph", chunk_size=300, chunk_overlap=0)
    page.post(f"/collections/{notes.pk}/settings/", {"action": "reindex", "chunk_profile": other.pk})
    event = only_event("collection.reindexed", object_id=str(notes.pk))
    assert (event.actor, event.channel) == (alice, "page")
    assert event.changes["chunk_profile"] == [notes.chunk_profile_id, other.pk]
    page.post(f"/collections/{notes.pk}/settings/", {"action": "rotate_link"})
    assert only_event("share_link.rotated", object_id=str(notes.pk)).channel == "page"


def test_team_shares_given_changed_and_stopped_are_recorded(bearer, alice):
    from django.contrib.auth.models import Group

    team = Group.objects.create(name="research")
    alice.groups.add(team)
    notes = collection_create(name="Notes", owner=alice)
    api = bearer(alice)
    url = f"/api/v1/collections/{notes.pk}/shares/"

    assert api.post(url, {"group": "research", "access": "read"}, format="json").status_code == 201
    assert api.post(url, {"group": team.pk, "access": "read"}, format="json").status_code == 200  # no change
    assert api.post(url, {"group": team.pk, "access": "write"}, format="json").status_code == 200
    assert api.delete(f"{url}{team.pk}/").status_code == 204

    shared = AuditEvent.objects.filter(action="collection.team_shared", object_id=str(notes.pk)).order_by(
        "pk"
    )
    assert [e.changes for e in shared] == [
        {"team research": [None, "read"]},
        {"team research": ["read", "write"]},
    ]
    stopped = only_event("collection.team_unshared", object_id=str(notes.pk))
    assert (stopped.actor, stopped.channel, stopped.changes) == (
        alice,
        "api",
        {"team research": ["write", None]},
    )


def test_an_admin_upload_is_one_event_naming_the_file_never_holding_its_content(
    admin_as, operator, alice, corpus
):
    notes = collection_create(name="Notes", owner=alice)
    data = (corpus / "text" / "gravity_hill.md").read_bytes()
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    form = {"collection": notes.pk, "upload": SimpleUploadedFile("gravity_hill.md", data), "tags": ""}
    assert admin_as.post("/admin/knowledge/document/add/", form).status_code == 302
    document = Document.objects.get(collection=notes)
    events = list(AuditEvent.objects.exclude(pk__in=before))
    assert [(e.action, e.object_id, e.actor, e.channel) for e in events] == [
        ("document.uploaded", str(document.pk), operator, "admin")
    ]
    recorded = str(events[0].changes)
    assert "gravity" in recorded and data.decode()[:40] not in recorded and "roll" not in recorded


def test_chunk_profiles_added_and_changed_in_the_admin(admin_as, operator):
    from knowledge.models import ChunkProfile

    form = {"name": "short", "strategy": "paragraph", "chunk_size": "400", "chunk_overlap": "50"}
    response = admin_as.post("/admin/knowledge/chunkprofile/add/", form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    profile = ChunkProfile.objects.get(name="short")
    added = only_event("chunk_profile.added", object_id=str(profile.pk))
    assert (added.actor, added.changes["chunk_size"]) == (operator, [None, 400])
    form["chunk_size"] = "600"
    assert admin_as.post(f"/admin/knowledge/chunkprofile/{profile.pk}/change/", form).status_code == 302
    changed = only_event("chunk_profile.changed", object_id=str(profile.pk))
    assert (changed.channel, changed.changes) == ("admin", {"chunk_size": [400, 600]})


def test_sources_added_synced_and_removed_through_the_api(bearer, alice, django_capture_on_commit_callbacks):
    notes = collection_create(name="Notes", owner=alice)
    api = bearer(alice)
    with django_capture_on_commit_callbacks():  # the syncs are queued, not run
        response = api.post(
            f"/api/v1/collections/{notes.pk}/sources/",
            {"location": "https://docs.example.org/"},
            format="json",
        )
        assert response.status_code == 201, response.content
        source_id = str(response.json()["id"])
        assert api.post(f"/api/v1/sources/{source_id}/sync/").status_code == 202
    added = only_event("source.added", object_id=source_id)
    assert (added.actor, added.channel) == (alice, "api")
    assert only_event("source.synced", object_id=source_id).actor == alice
    assert api.delete(f"/api/v1/sources/{source_id}/").status_code == 204
    assert only_event("source.removed", object_id=source_id).actor == alice


def test_unlisting_records_every_subscription_it_ends_in_one_insert(bearer, alice, bob, charlie, make_user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from knowledge.services.marketplace import subscriptions_end_all

    listed = collection_create(name="Listed", owner=alice, visibility="public")
    listed.listed = True
    listed.save()
    for user in (bob, charlie, make_user("dora")):
        assert bearer(user).post(f"/api/v1/collections/{listed.pk}/subscribe/").status_code in (200, 201)
    with CaptureQueriesContext(connection) as queries:
        assert subscriptions_end_all(collection=listed) == 3
    inserts = [
        q for q in queries.captured_queries if q["sql"].startswith('INSERT INTO "accounts_auditevent"')
    ]
    assert len(inserts) == 1
    ended = AuditEvent.objects.filter(action="subscription.ended")
    assert ended.count() == 3
    assert all(
        e.object_repr.endswith("(ended)") and e.changes == {"reason": [None, "unlisted"]} for e in ended
    )
