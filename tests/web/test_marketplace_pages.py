"""Marketplace pages (Django test client): browse, search, subscribe and unsubscribe, list or unlist."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from knowledge.models import Collection, Document, Subscription
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.services.teams import collection_share_set


@pytest.fixture
def listed(alice, corpus):
    collection = collection_create(
        name="Odd places", owner=alice, description="Optical illusions", tags=["geology"]
    )
    path = corpus / "text" / "gravity_hill.md"
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    assert Document.objects.get(pk=result.document.pk).status == Document.Status.READY
    Collection.objects.filter(pk=collection.pk).update(listed=True)
    return collection


def login(client, user):
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_marketplace_requires_login(client):
    response = client.get("/marketplace/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert client.post("/marketplace/1/subscribe/").status_code == 302


@pytest.mark.django_db(transaction=True)
def test_subscribe_and_unsubscribe_flow(client, alice, bob, listed):
    login(client, bob)
    page = client.get("/marketplace/").content.decode()
    assert "Odd places" in page and "Optical illusions" in page and "geology" in page
    assert 'href="/marketplace/"' in page  # the nav link
    assert f'action="/marketplace/{listed.pk}/subscribe/"' in page and "csrfmiddlewaretoken" in page
    assert "You have no subscriptions yet." in page
    assert client.get(f"/collections/{listed.pk}/").status_code == 404
    assert "Odd places" not in client.get("/collections/").content.decode()

    response = client.post(f"/marketplace/{listed.pk}/subscribe/", {"next": "/marketplace/?q=geology"})
    assert response.status_code == 302 and response["Location"] == "/marketplace/?q=geology"
    page = client.get("/marketplace/?q=geology").content.decode()
    assert f'action="/marketplace/{listed.pk}/unsubscribe/"' in page
    assert "You have no subscriptions yet." not in page
    detail = client.get(f"/collections/{listed.pk}/")
    assert detail.status_code == 200 and "gravity_hill.md" in detail.content.decode()
    assert "Odd places" in client.get("/collections/").content.decode()  # in Bob's library
    assert "listing-form" not in detail.content.decode()  # only the owner lists or unlists

    response = client.post(f"/marketplace/{listed.pk}/unsubscribe/", {"next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == "/marketplace/"
    assert client.get(f"/collections/{listed.pk}/").status_code == 404
    assert "You have no subscriptions yet." in client.get("/marketplace/").content.decode()


@pytest.mark.django_db
def test_search_and_refusals(client, alice, bob, charlie):
    collection_create(name="Hidden", owner=alice, description="not listed")
    maps = collection_create(name="Maps", owner=alice, tags=["cartography"])
    Collection.objects.filter(pk=maps.pk).update(listed=True)
    login(client, charlie)
    assert "Hidden" not in client.get("/marketplace/").content.decode()
    assert "Maps" in client.get("/marketplace/?q=CARTO").content.decode()
    assert "Maps" not in client.get("/marketplace/?q=zebra").content.decode()
    hidden = Collection.objects.get(name="Hidden")
    assert client.post(f"/marketplace/{hidden.pk}/subscribe/").status_code == 404
    assert client.get(f"/marketplace/{maps.pk}/subscribe/").status_code == 405
    login(client, alice)
    assert client.post(f"/marketplace/{maps.pk}/subscribe/").status_code == 400  # her own


@pytest.mark.django_db
def test_owner_toggles_listing(client, alice, bob):
    collection = collection_create(name="Mine", owner=alice)
    login(client, bob)
    assert client.post(f"/collections/{collection.pk}/listing/", {"listed": "1"}).status_code == 404
    login(client, alice)
    assert 'name="listed" value="1"' in client.get(f"/collections/{collection.pk}/").content.decode()
    response = client.post(f"/collections/{collection.pk}/listing/", {"listed": "1"})
    assert response.status_code == 302
    assert response["Location"] == f"/collections/{collection.pk}/#collection-settings"  # opened again
    collection.refresh_from_db()
    assert collection.listed is True
    assert "Unlist" in client.get(f"/collections/{collection.pk}/").content.decode()
    client.post(f"/collections/{collection.pk}/listing/", {"listed": "0"})
    collection.refresh_from_db()
    assert collection.listed is False


@pytest.mark.security
@pytest.mark.django_db
def test_owner_revokes_and_reinstates_a_subscriber_from_the_collection_page(alice, bob, charlie):
    collection = collection_create(name="Shared notes", owner=alice, description="for subscribers")
    Collection.objects.filter(pk=collection.pk).update(listed=True)
    as_alice, as_bob, as_charlie = Client(), Client(), Client()
    login(as_alice, alice), login(as_bob, bob), login(as_charlie, charlie)
    assert as_bob.post(f"/marketplace/{collection.pk}/subscribe/").status_code == 302
    assert as_bob.get(f"/collections/{collection.pk}/").status_code == 200
    subscription = Subscription.objects.get(user=bob, collection=collection)
    base = f"/collections/{collection.pk}/subscriptions/{subscription.pk}"

    page = as_alice.get(f"/collections/{collection.pk}/").content.decode()
    assert 'id="subscribers"' in page and f'action="{base}/revoke/"' in page
    assert 'id="subscribers"' not in as_bob.get(f"/collections/{collection.pk}/").content.decode()
    assert as_bob.post(f"{base}/revoke/").status_code == 403  # he reads it, he does not own it
    assert as_charlie.post(f"{base}/revoke/").status_code == 404
    assert as_alice.post(f"{base}/revoke/").status_code == 302
    assert as_bob.get(f"/collections/{collection.pk}/").status_code == 404
    assert as_bob.post(f"/marketplace/{collection.pk}/subscribe/").status_code == 403
    assert "Access revoked by the owner" in as_bob.get("/marketplace/").content.decode()
    assert as_bob.get(f"/collections/{collection.pk}/").status_code == 404

    assert f'action="{base}/reinstate/"' in as_alice.get(f"/collections/{collection.pk}/").content.decode()
    assert as_alice.post(f"{base}/unknown/").status_code == 404
    assert as_alice.post(f"{base}/reinstate/").status_code == 302
    assert as_bob.get(f"/collections/{collection.pk}/").status_code == 200


@pytest.mark.security
@pytest.mark.django_db
def test_owner_sees_and_rotates_the_share_link_on_the_collection_page(alice, bob):
    collection = collection_create(name="By link", owner=alice, visibility="unlisted")
    as_alice, as_bob = login(Client(), alice), login(Client(), bob)
    page = as_alice.get(f"/collections/{collection.pk}/").content.decode()
    old_link = f"/collections/link/{collection.share_token}/"
    assert old_link in page
    assert collection.share_token not in as_bob.get("/marketplace/").content.decode()
    assert as_bob.get(f"/collections/{collection.pk}/").status_code == 404
    assert as_bob.post(old_link)["Location"] == f"/collections/{collection.pk}/"
    page = as_bob.get(f"/collections/{collection.pk}/").content.decode()
    assert "By link" in page and collection.share_token not in page  # readers do not see the link

    response = as_alice.post(f"/collections/{collection.pk}/settings/", {"action": "rotate_link"})
    assert response.status_code == 302
    collection.refresh_from_db()
    assert (
        f"/collections/link/{collection.share_token}/"
        in as_alice.get(f"/collections/{collection.pk}/").content.decode()
    )
    assert as_bob.get(f"/collections/{collection.pk}/").status_code == 404
    assert as_bob.get(old_link).status_code == 404
    assert (
        as_bob.post(f"/collections/{collection.pk}/settings/", {"action": "rotate_link"}).status_code == 404
    )
    anonymous = Client().get(f"/collections/link/{collection.share_token}/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


@pytest.mark.django_db(transaction=True)
def test_a_listing_shared_with_your_team_says_so_instead_of_subscribe_to_read(client, alice, bob, listed):
    login(client, bob)
    assert "subscribe to read" in listing_badge(client, listed)
    geology = Group.objects.create(name="Geology")
    alice.groups.add(geology)
    bob.groups.add(geology)
    collection_share_set(collection=listed, user=alice, group="Geology", can_write=False)
    assert listing_badge(client, listed) == "shared with your team"
    assert client.get(f"/collections/{listed.pk}/").status_code == 200  # as the badge says


def listing_badge(client, collection) -> str:
    page = client.get("/marketplace/").content.decode()
    row = page.split(f'<tr data-id="{collection.pk}">', 1)[1].split("</tr>", 1)[0]
    return re.search(r'<span class="badge access">(.*?)</span>', row).group(1)
