"""The operator admin: editable global settings and collection counts without N+1."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.models import Chunk, ChunkProfile, Collection, Document, KnowledgeSetting, Profile


def _collection_with_content(owner, name: str, documents: int, chunks_each: int) -> Collection:
    profile = ChunkProfile.objects.get(is_active=True)
    collection = Collection.objects.create(owner=owner, name=name, chunk_profile=profile)
    for d in range(documents):
        digest = hashlib.sha256(f"{name}-{d}".encode()).hexdigest()
        document = Document.objects.create(
            collection=collection,
            filename=f"{name}-{d}.txt",
            content_hash=digest,
            size=10,
            file=f"documents/{digest}.txt",
            status=Document.Status.READY,
        )
        Chunk.objects.bulk_create(
            Chunk(
                document=document,
                collection=collection,
                chunk_profile=profile,
                embedding_model=collection.embedding_model,  # the searchable set the list counts
                index=i,
                content=f"chunk {i}",
                token_count=2,
                source_ref="section=x",
                embedding=[0.1] * 384,
            )
            for i in range(chunks_each)
        )
    return collection


def test_settings_list_shows_names_in_words_values_locks_and_what_they_do(admin_client):
    KnowledgeSetting.objects.filter(key="hybrid").update(is_locked=True, value=False)
    page = admin_client.get("/admin/knowledge/knowledgesetting/").content.decode()
    assert "Match exact words too" in page and "Combine word matching with meaning-based search." in page
    assert "locked for everyone" in page and "users may change it" in page
    assert ">off<" in page  # a switch's value in words, not "False"
    assert 'name="form-0-value"' not in page  # rows open a form; no unlabelled inputs in the list


def test_a_setting_is_edited_with_the_input_its_type_asks_for(admin_client):
    switch = KnowledgeSetting.objects.get(key="hybrid")
    page = admin_client.get(f"/admin/knowledge/knowledgesetting/{switch.pk}/change/").content.decode()
    assert 'type="checkbox" name="value"' in page and "Match exact words too" in page
    number = KnowledgeSetting.objects.get(key="maxDocs")
    page = admin_client.get(f"/admin/knowledge/knowledgesetting/{number.pk}/change/").content.decode()
    assert 'type="number" name="value"' in page and 'min="1"' in page and 'max="100"' in page

    response = admin_client.post(
        f"/admin/knowledge/knowledgesetting/{number.pk}/change/", {"value": "8", "is_locked": "on"}
    )
    assert response.status_code == 302, response.content[:2000]
    number.refresh_from_db()
    assert (number.value, number.is_locked) == (8, True)
    response = admin_client.post(f"/admin/knowledge/knowledgesetting/{switch.pk}/change/", {})
    assert response.status_code == 302
    switch.refresh_from_db()
    assert switch.value is False  # an unticked checkbox is off, stored as JSON false


def test_settings_form_refuses_out_of_range_values(admin_client):
    row = KnowledgeSetting.objects.get(key="minRelevanceScore")
    stored = row.value
    response = admin_client.post(
        f"/admin/knowledge/knowledgesetting/{row.pk}/change/", {"value": "1.7", "is_locked": ""}
    )
    assert response.status_code == 200
    assert b"less than or equal to 1.0" in response.content
    row.refresh_from_db()
    assert row.value == stored  # the refused value was not saved


@pytest.mark.parametrize("collections", [2, 6])
def test_collection_changelist_counts_in_constant_queries(admin_client, alice, collections):
    for n in range(collections):
        _collection_with_content(alice, f"c{n}", documents=2, chunks_each=3)
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get("/admin/knowledge/collection/")
    assert response.status_code == 200
    rows = response.context["cl"].result_list
    assert [(c._documents, c._chunks) for c in rows] == [(2, 6)] * collections
    # Same number of queries whatever the number of collections.
    assert len(queries) <= 12


def test_documents_filter_by_status_and_collection(admin_client, alice):
    collection = _collection_with_content(alice, "filtered", documents=2, chunks_each=1)
    Document.objects.filter(collection=collection).update(status=Document.Status.FAILED)
    response = admin_client.get(
        f"/admin/knowledge/document/?status__exact=failed&collection__id__exact={collection.pk}"
    )
    assert response.status_code == 200
    assert response.context["cl"].result_count == 2
    response = admin_client.get("/admin/knowledge/document/?status__exact=ready")
    assert response.context["cl"].result_count == 0


@pytest.mark.parametrize(
    "model",
    [
        "collection",
        "document",
        "chunk",
        "chunkprofile",
        "knowledgesetting",
        "profile",
        "subscription",
        "chatsession",
        "chatturn",
    ],
)
def test_every_model_has_a_working_admin_list(admin_client, model):
    assert admin_client.get(f"/admin/knowledge/{model}/").status_code == 200


def test_profile_inline_refuses_a_collection_the_owner_cannot_read(admin_client, alice, charlie):
    private = _collection_with_content(alice, "alice-private", documents=0, chunks_each=0)
    own = _collection_with_content(charlie, "charlie-own", documents=0, chunks_each=0)
    profile = Profile.objects.create(owner=charlie, name="charlie's", tag="charlies")
    url = f"/admin/knowledge/profile/{profile.pk}/change/"

    def post(collection):
        return admin_client.post(url, _profile_change_form(profile, collection))

    response = post(private)
    assert response.status_code == 200
    assert "The profile&#x27;s owner cannot read this collection." in response.content.decode()
    assert not profile.profile_collections.exists()
    assert post(own).status_code == 302
    assert list(profile.profile_collections.values_list("collection", flat=True)) == [own.pk]


def _profile_change_form(profile, collection) -> dict:
    return {
        "name": profile.name,
        "tag": profile.tag,
        "owner": profile.owner_id,
        "profile_type": profile.profile_type,
        "knowledge_overrides": "{}",
        "profile_collections-TOTAL_FORMS": "1",
        "profile_collections-INITIAL_FORMS": "0",
        "profile_collections-0-collection": str(collection.pk),
        "profile_collections-0-profile": str(profile.pk),
    }


def _collection_change_form(collection: Collection, **changes) -> dict:
    form = {
        "owner": collection.owner_id or "",
        "name": collection.name,
        "description": collection.description,
        "tags": ",".join(collection.tags),
        "visibility": collection.visibility,
        "embedding_model": collection.embedding_model,
        **team_shares_form(),
    }
    return {**form, **changes}


def team_shares_form(*groups, can_write: bool = False) -> dict:
    """The collection page's inline of team shares: ``groups`` to add (none: the inline left empty)."""
    form = {"shares-TOTAL_FORMS": str(len(groups)), "shares-INITIAL_FORMS": "0"}
    for index, group in enumerate(groups):
        form[f"shares-{index}-group"] = str(group.pk)
        if can_write:
            form[f"shares-{index}-can_write"] = "on"
    return form


@pytest.mark.django_db
def test_an_operator_shares_a_collection_with_a_team_in_the_admin(admin_client, admin_user, alice, bob):
    from django.contrib.auth.models import Group

    from knowledge.access import collection_is_content_writable, readable_collections

    collection = _collection_with_content(alice, "notes", documents=0, chunks_each=0)
    editors = Group.objects.create(name="editors")
    bob.groups.add(editors)
    url = f"/admin/knowledge/collection/{collection.pk}/change/"
    assert "Collection shares" in admin_client.get(url).content.decode()
    response = admin_client.post(
        url, {**_collection_change_form(collection), **team_shares_form(editors, can_write=True)}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    share = collection.shares.get()
    assert (share.group, share.can_write, share.created_by) == (editors, True, admin_user)
    assert readable_collections(bob).filter(pk=collection.pk).exists()
    assert collection_is_content_writable(user=bob, collection=collection)


@pytest.mark.django_db
def test_changing_a_collections_model_in_the_admin_re_embeds_instead_of_relabelling(admin_client, alice):
    """The stored vectors are the old model's: the admin queues a re-embed (here: no document, so
    the collection switches at once) and refuses a model the registry does not know."""
    collection = _collection_with_content(alice, "notes", documents=0, chunks_each=0)
    url = f"/admin/knowledge/collection/{collection.pk}/change/"
    e5 = "intfloat/multilingual-e5-small"
    refused = admin_client.post(url, _collection_change_form(collection, embedding_model="bert"))
    assert refused.status_code == 200 and "not one of the available choices" in refused.content.decode()
    response = admin_client.post(url, _collection_change_form(collection, embedding_model=e5))
    assert response.status_code == 302, response.content.decode()[:2000]
    collection.refresh_from_db()
    assert (collection.embedding_model, collection.pending_embedding_model) == (e5, "")


def test_renaming_a_collection_to_a_name_the_owner_already_uses_is_refused_and_changes_nothing(alice):
    from config.base.errors import KnowledgeError
    from knowledge.services.collections import collection_create, collection_update

    collection_create(name="Taken", owner=alice)
    mine = collection_create(name="Mine", owner=alice, description="kept")
    with pytest.raises(KnowledgeError, match="a collection named 'Taken' already exists"):
        collection_update(collection=mine, name="Taken", description="changed")
    mine.refresh_from_db()
    assert (mine.name, mine.description) == ("Mine", "kept")
    with pytest.raises(KnowledgeError, match="needs a name"):
        collection_update(collection=mine, name="   ")


@pytest.mark.django_db
def test_team_shares_and_a_visibility_change_beside_a_re_embed_are_audited_in_the_admin(
    admin_client, admin_user, alice
):
    """The inline's shares are recorded as on the page; the re-embed's own record hides no other change."""
    from django.contrib.auth.models import Group

    from accounts.models import AuditEvent

    collection = _collection_with_content(alice, "notes", documents=0, chunks_each=0)
    editors = Group.objects.create(name="editors")
    url = f"/admin/knowledge/collection/{collection.pk}/change/"
    shared = admin_client.post(url, {**_collection_change_form(collection), **team_shares_form(editors)})
    assert shared.status_code == 302, shared.content.decode()[:2000]
    event = AuditEvent.objects.get(action="collection.team_shared", object_id=str(collection.pk))
    assert (event.actor, event.channel, event.changes) == (
        admin_user,
        "admin",
        {"team editors": [None, "read"]},
    )

    share = collection.shares.get()
    form = {
        **_collection_change_form(
            collection, embedding_model="intfloat/multilingual-e5-small", visibility="public"
        ),
        "shares-TOTAL_FORMS": "1",
        "shares-INITIAL_FORMS": "1",
        "shares-0-id": str(share.pk),
        "shares-0-collection": str(collection.pk),
        "shares-0-group": str(editors.pk),
        "shares-0-DELETE": "on",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    changed = AuditEvent.objects.get(action="collection.changed", object_id=str(collection.pk))
    assert changed.changes["visibility"] == ["private", "public"]
    stopped = AuditEvent.objects.get(action="collection.team_unshared", object_id=str(collection.pk))
    assert stopped.changes == {"team editors": ["read", None]}
