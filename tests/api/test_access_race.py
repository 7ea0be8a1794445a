"""Grants and revocations of one collection serialise: a link opened during a revocation leaves no access."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from accounts.api_tokens import token_create
from knowledge.models import Collection, LinkGrant, Subscription
from knowledge.services.collections import collection_create, collection_update
from tests.api.test_marketplace import QUESTION, ingest
from tests.waiting import until

ROUNDS = 5
THREADS = 8


def call(base: str, secret: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {secret}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def hammer(base: str, secret: str, path: str, stop: threading.Event, statuses: list[int]) -> None:
    while not stop.is_set():
        statuses.append(call(base, secret, "POST", path)[0])


def while_hammered(statuses: list[int], change, refused: int, what: str):
    """Make ``change`` while the threads are at work; wait until each has answered again since and
    one was ``refused``. Returns what ``change`` returned."""
    until(lambda: len(statuses) >= THREADS, "the threads' first answers")
    before = len(statuses)
    result = change()
    until(lambda: len(statuses) >= before + THREADS and refused in statuses[before:], what)
    return result


def hammering(base: str, secret: str, paths: list[str], stop: threading.Event, statuses: list[int]):
    """THREADS threads POSTing ``paths`` in turn until ``stop`` is set."""
    threads = [
        threading.Thread(target=hammer, args=(base, secret, paths[n % len(paths)], stop, statuses))
        for n in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    return threads


def revoke_while_link_is_opened(base: str, alice: str, carol: str, collection_id: int, token: str) -> list:
    """Alice revokes carol's subscription while carol's threads keep opening the share link."""
    subscription = call(base, carol, "POST", f"/api/v1/collections/{collection_id}/subscribe/")[1]
    stop, statuses = threading.Event(), []
    # Mostly the link; one thread in four subscribes again, the other way back in.
    link, subscribe = f"/api/v1/collections/link/{token}/", f"/api/v1/collections/{collection_id}/subscribe/"
    threads = hammering(base, carol, [link, link, link, subscribe], stop, statuses)
    path = f"/api/v1/collections/{collection_id}/subscriptions/{subscription['id']}/"
    try:
        revoked = while_hammered(
            statuses, lambda: call(base, alice, "DELETE", path)[0], 403, "a refusal after the revocation"
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert revoked == 204
    assert set(statuses) <= {200, 403}, statuses  # never a server error
    return [subscription["id"], path]


@pytest.mark.security
@pytest.mark.django_db(transaction=True)
def test_a_share_link_opened_during_a_revocation_never_lets_the_revoked_reader_back(
    live_server, alice, charlie, corpus
):
    shared = collection_create(name="shared", owner=alice, visibility="unlisted")
    ingest(shared, corpus / "text" / "gravity_hill.md")
    shared = collection_update(collection=shared, listed=True)
    base = live_server.url
    as_alice = token_create(user=alice, name="race")[1]
    as_carol = token_create(user=charlie, name="race")[1]
    detail = f"/api/v1/collections/{shared.pk}/"
    for _ in range(ROUNDS):
        subscription_id, path = revoke_while_link_is_opened(
            base, as_alice, as_carol, shared.pk, shared.share_token
        )
        assert Subscription.objects.get(pk=subscription_id).revoked_at is not None
        assert not LinkGrant.objects.filter(user=charlie, collection=shared).exists()
        assert call(base, as_carol, "GET", detail)[0] == 404
        retrieved = call(
            base, as_carol, "POST", "/api/v1/retrieve/", {"question": QUESTION, "collections": [shared.pk]}
        )
        assert retrieved[0] == 404 and "gravity" not in json.dumps(retrieved[1]).lower()
        # Alice lets carol back in for the next round; carol reads the collection again.
        assert call(base, as_alice, "POST", f"{path}reinstate/")[0] == 200
        assert call(base, as_carol, "GET", detail)[0] == 200


@pytest.mark.security
@pytest.mark.django_db(transaction=True)
def test_a_share_link_opened_while_the_owner_rotates_it_lets_nobody_in_with_the_old_link(
    live_server, alice, charlie, corpus
):
    shared = collection_create(name="shared", owner=alice, visibility="unlisted")
    ingest(shared, corpus / "text" / "gravity_hill.md")
    base = live_server.url
    as_alice = token_create(user=alice, name="race")[1]
    as_carol = token_create(user=charlie, name="race")[1]
    for _ in range(ROUNDS):
        old_token = Collection.objects.get(pk=shared.pk).share_token
        stop, statuses = threading.Event(), []
        threads = hammering(base, as_carol, [f"/api/v1/collections/link/{old_token}/"], stop, statuses)
        rotate = f"/api/v1/collections/{shared.pk}/share-link/"
        try:
            rotated = while_hammered(
                statuses, lambda to=rotate: call(base, as_alice, "POST", to)[0], 404, "the old link refused"
            )
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert rotated == 200
        assert set(statuses) <= {200, 404}, statuses
        assert not LinkGrant.objects.filter(user=charlie, collection=shared).exists()
        assert call(base, as_carol, "GET", f"/api/v1/collections/{shared.pk}/")[0] == 404
