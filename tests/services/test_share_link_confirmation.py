"""Opening a share link is a deliberate act: following it shows the collection, a POST opens it.

A GET that recorded the grant let any site open a collection in a visitor's name: a page that
navigates a signed-in victim to ``/collections/link/<token>/`` (session cookies are sent on
top-level navigation) would put the attacker's collection among the victim's readable ones,
where its text could reach the victim's searches and answers. Following a link now shows what
it opens; only a POST, CSRF-checked for cookie sessions, records the grant.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from knowledge.models import LinkGrant
from knowledge.services.collections import collection_create

pytestmark = [pytest.mark.django_db, pytest.mark.security]


@pytest.fixture
def shared(alice):
    return collection_create(name="Mallory's handbook", owner=alice, visibility="unlisted")


def _web(user, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='link')[1]}")
    return client


def test_following_the_link_shows_the_collection_without_opening_it(shared, bob):
    as_bob = _web(bob)
    page = as_bob.get(f"/collections/link/{shared.share_token}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Mallory&#x27;s handbook" in body and 'method="post"' in body
    assert not LinkGrant.objects.filter(user=bob, collection=shared).exists()
    assert as_bob.get(f"/collections/{shared.pk}/").status_code == 404


def test_a_cross_site_post_without_the_csrf_token_is_refused(shared, bob):
    as_bob = _web(bob, csrf=True)
    assert as_bob.post(f"/collections/link/{shared.share_token}/").status_code == 403
    assert not LinkGrant.objects.filter(user=bob, collection=shared).exists()


def test_the_confirmation_form_opens_it(shared, bob):
    as_bob = _web(bob, csrf=True)
    as_bob.get(f"/collections/link/{shared.share_token}/")  # sets the CSRF cookie, as a browser would
    opened = as_bob.post(
        f"/collections/link/{shared.share_token}/", {"csrfmiddlewaretoken": as_bob.cookies["csrftoken"].value}
    )
    assert opened.status_code == 302 and opened["Location"] == f"/collections/{shared.pk}/"
    assert LinkGrant.objects.filter(user=bob, collection=shared).exists()
    assert as_bob.get(f"/collections/{shared.pk}/").status_code == 200
    # Once readable, the link goes straight to the collection.
    assert as_bob.get(f"/collections/link/{shared.share_token}/")["Location"] == f"/collections/{shared.pk}/"


def test_the_owner_following_her_own_link_goes_straight_to_it(shared, alice):
    response = _web(alice).get(f"/collections/link/{shared.share_token}/")
    assert response.status_code == 302 and response["Location"] == f"/collections/{shared.pk}/"


def test_the_api_previews_on_get_and_opens_on_post(shared, bob):
    as_bob = _api(bob)
    preview = as_bob.get(f"/api/v1/collections/link/{shared.share_token}/")
    assert preview.status_code == 200
    assert preview.json()["id"] == shared.pk and preview.json()["opened"] is False
    assert as_bob.get(f"/api/v1/collections/{shared.pk}/").status_code == 404

    opened = as_bob.post(f"/api/v1/collections/link/{shared.share_token}/")
    assert opened.status_code == 200 and opened.json()["opened"] is True
    assert as_bob.get(f"/api/v1/collections/{shared.pk}/").status_code == 200


def test_the_api_refuses_a_cookie_session_post_without_csrf(shared, bob):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(bob)
    refused = client.post(f"/api/v1/collections/link/{shared.share_token}/")
    assert refused.status_code == 403
    assert not LinkGrant.objects.filter(user=bob, collection=shared).exists()


def test_opening_a_private_collections_link_or_a_made_up_one_is_not_found(alice, bob):
    private = collection_create(name="Alice's notes", owner=alice, visibility="private")
    for token in (private.share_token, "not-a-real-token-at-all-not-at-all"):
        assert _web(bob).post(f"/collections/link/{token}/").status_code == 404
        assert _api(bob).post(f"/api/v1/collections/link/{token}/").status_code == 404
    assert not LinkGrant.objects.filter(user=bob).exists()
