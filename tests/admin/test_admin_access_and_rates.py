"""The admin grants, revokes and writes through the same services, lock and rates as the pages and API."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Collection, Document, LinkGrant, ProcessingJob, Subscription
from knowledge.services.collections import chunk_profile_default, collection_create, collection_update
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.services.marketplace import subscription_create
from knowledge.services.sharing import collection_link_open
from tests.conftest import throttle_rates

pytestmark = [pytest.mark.security, pytest.mark.django_db]


@pytest.fixture
def one_per_minute(settings):
    throttle_rates(settings, uploads="1/minute", writes="1/minute")


def test_the_admin_revoke_action_drops_the_link_grant_and_keeps_the_reader_out(admin_client, alice, bob):
    shared = collection_update(
        collection=collection_create(name="shared", owner=alice, visibility="unlisted"), listed=True
    )
    subscription, _ = subscription_create(user=bob, collection=shared)
    Subscription.objects.filter(pk=subscription.pk).update(is_active=False)  # bob left...
    collection_link_open(user=bob, share_token=shared.share_token)  # ...but kept the link
    assert LinkGrant.objects.filter(user=bob).exists()
    response = admin_client.post(
        "/admin/knowledge/subscription/",
        {"action": "revoke", "_selected_action": [subscription.pk]},
    )
    assert response.status_code == 302
    subscription.refresh_from_db()
    assert subscription.revoked_at is not None and not subscription.is_active
    assert not LinkGrant.objects.filter(user=bob).exists()
    # Rows change only through the actions: no adding, and an edit posts nothing that sticks.
    assert admin_client.get("/admin/knowledge/subscription/add/").status_code == 403
    assert admin_client.get("/admin/knowledge/linkgrant/add/").status_code == 403
    admin_client.post(f"/admin/knowledge/subscription/{subscription.pk}/change/", {"revoked_at": ""})
    subscription.refresh_from_db()
    assert subscription.revoked_at is not None
    # Nor deleting: a revoked row deleted would let bob subscribe afresh.
    assert admin_client.post(f"/admin/knowledge/subscription/{subscription.pk}/delete/").status_code == 403
    assert Subscription.objects.filter(pk=subscription.pk, revoked_at__isnull=False).exists()


def test_an_operator_action_skips_a_subscription_gone_since_it_was_selected(alice, bob, charlie):
    from knowledge.services.marketplace import subscriptions_revoke_as_operator

    shared = collection_update(
        collection=collection_create(name="shared", owner=alice, visibility="unlisted"), listed=True
    )
    staying, _ = subscription_create(user=bob, collection=shared)
    gone, _ = subscription_create(user=charlie, collection=shared)
    selected = [staying.pk, gone.pk]
    Subscription.objects.filter(pk=gone.pk).delete()
    assert subscriptions_revoke_as_operator(subscription_ids=selected) == 1
    staying.refresh_from_db()
    assert staying.revoked_at is not None


def _collection_form(name: str) -> dict:
    return {
        "name": name,
        "visibility": "private",
        "chunk_profile": chunk_profile_default().pk,
        "tags": "",
        "shares-TOTAL_FORMS": "0",  # the inline of team shares, left empty
        "shares-INITIAL_FORMS": "0",
    }


def test_admin_writes_count_against_the_operators_rates(admin_client, alice, corpus, one_per_minute):
    assert admin_client.post("/admin/knowledge/collection/add/", _collection_form("one")).status_code == 302
    refused = admin_client.post("/admin/knowledge/collection/add/", _collection_form("two"))
    assert refused.status_code == 200 and "too many" in refused.content.decode().lower()
    assert list(Collection.objects.values_list("name", flat=True)) == ["one"]

    notes = collection_create(name="notes", owner=alice)

    def upload(name: str):
        data = (corpus / "text" / name).read_bytes()
        form = {"collection": notes.pk, "upload": SimpleUploadedFile(name, data), "tags": ""}
        return admin_client.post("/admin/knowledge/document/add/", form)

    assert upload("gravity_hill.md").status_code == 302
    refused = upload("bates.txt")
    assert refused.status_code == 200 and "too many" in refused.content.decode().lower()
    assert Document.objects.count() == 1


def test_a_refused_admin_form_does_not_use_up_the_write_rate(admin_client, one_per_minute):
    refused = admin_client.post("/admin/knowledge/collection/add/", _collection_form(""))  # no name
    assert refused.status_code == 200 and not Collection.objects.exists()
    assert admin_client.post("/admin/knowledge/collection/add/", _collection_form("one")).status_code == 302


def test_an_admin_action_counts_each_selected_document(admin_client, alice, corpus, settings):
    throttle_rates(settings, writes="2/minute")
    notes = collection_create(name="notes", owner=alice)
    documents = [
        document_upload(
            collection=notes,
            sync=True,
            upload=DocumentUpload(filename=name, data=(corpus / "text" / name).read_bytes()),
        ).document.pk
        for name in ("gravity_hill.md", "bates.txt", "obama.txt")
    ]
    queued_before = ProcessingJob.objects.count()
    response = admin_client.post(
        "/admin/knowledge/document/",
        {"action": "reindex_documents", "_selected_action": documents},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert any("at most 2" in m for m in shown), shown  # three documents: more than the rate allows at all
    assert ProcessingJob.objects.count() == queued_before


def test_a_new_embedding_model_in_the_admin_counts_as_a_re_index(admin_client, alice, one_per_minute):
    """The API charges a model change one write (it re-embeds every document): the admin charges the same."""
    from tests.admin.test_content import _collection_change_form

    notes = collection_create(name="notes", owner=alice)
    url = f"/admin/knowledge/collection/{notes.pk}/change/"
    e5, minilm = "intfloat/multilingual-e5-small", notes.embedding_model

    def change(**fields):
        return admin_client.post(url, _collection_change_form(notes, description="kept", **fields))

    assert change().status_code == 302  # another field: no charge
    assert change(embedding_model=e5).status_code == 302
    refused = change(embedding_model=minilm)
    assert refused.status_code == 200 and "too many" in refused.content.decode().lower()
    notes.refresh_from_db()
    assert (notes.embedding_model, notes.description) == (e5, "kept")
