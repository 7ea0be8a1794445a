"""The preview of a source, as the collection page asks for it: what it lists, and what a hostile or slow
site cannot make it do: hold a database connection while it waits on the network, wait past its deadline,
fetch more than a handful of sitemaps, or run more than a few at once for one user."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.db import connections
from django.test import Client
from rest_framework.test import APIClient

from knowledge.services.collections import collection_create
from tests.sources.loopback_sites import LoopbackSite

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]


@pytest.fixture
def sites(settings):
    """Sites on 127.0.0.1 (the operator allows that address for the tests), closed after the test."""
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.1/32"
    opened = []

    def start(mode: str = "quick", **options) -> LoopbackSite:
        opened.append(LoopbackSite(mode, **options))
        return opened[-1]

    yield start
    for site in opened:
        site.close()


@pytest.fixture
def collection(alice):
    return collection_create(name="Handbook", owner=alice)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def preview(client: Client, collection_id: int, location: str):
    return client.post(
        f"/collections/{collection_id}/sources/preview/",
        {"location": location},
        HTTP_ACCEPT="application/json",
    )


def open_database_connections() -> list[str]:
    """The database connections this thread holds open (what a pool would count as taken)."""
    return [c.alias for c in connections.all(initialized_only=True) if c.connection is not None]


@pytest.fixture
def network_spy(monkeypatch):
    """Records, for every name lookup and connection to a watched port, whether the thread making it held
    a database connection at that moment: ``spy.watch(port)``, then ``spy.events``."""

    class Spy:
        ports: set[int] = set()
        events: list[tuple[str, list[str]]] = []

        def watch(self, port: int) -> None:
            self.ports.add(port)

    spy = Spy()
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(sock, address):
        if isinstance(address, tuple) and address[1] in spy.ports:
            spy.events.append(("connect", open_database_connections()))
        return real_connect(sock, address)

    def getaddrinfo(host, port, *args, **kwargs):
        if port in spy.ports:
            spy.events.append(("resolve", open_database_connections()))
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return spy


def test_a_preview_lists_the_start_page_and_its_links(sites, alice, collection):
    site = sites()
    response = preview(signed_in(alice), collection.pk, f"{site.url}/docs/")
    assert response.status_code == 200, response.content
    items = response.json()["items"]
    assert items[0] == f"{site.url}/docs/" and f"{site.url}/docs/page-2.html" in items


# -- no database connection while the network is waited on ----------------------------------------------


def test_a_preview_holds_no_database_connection_while_it_fetches(sites, network_spy, alice, collection):
    site = sites()
    network_spy.watch(site.port)
    client = signed_in(alice)
    assert preview(client, collection.pk, f"{site.url}/index.xml").status_code == 200
    assert [kind for kind, _ in network_spy.events].count("connect") >= 3  # robots, index, child sitemaps
    assert [(kind, held) for kind, held in network_spy.events if held] == []


@pytest.mark.parametrize("kind", ["web", "git"])
def test_adding_a_source_holds_no_database_connection_while_its_address_is_resolved(
    sites, network_spy, monkeypatch, alice, collection, kind
):
    """Adding a source checks its host's addresses now: the lookup of a name the user chose may take the
    resolver's whole timeout. (The first sync runs on a worker; here it is left out.)"""
    site = sites()
    network_spy.watch(site.port)
    monkeypatch.setattr("knowledge.services.sources.source_sync_queue", lambda **kwargs: None)
    location = f"{site.url}/docs/" if kind == "web" else f"https://127.0.0.1:{site.port}/handbook.git"
    page = signed_in(alice).post(f"/collections/{collection.pk}/sources/add/", {"location": location})
    assert page.status_code == 302
    api = APIClient()
    api.force_authenticate(alice)
    other = collection_create(name="Other", owner=alice)
    created = api.post(f"/api/v1/collections/{other.pk}/sources/", {"location": location}, format="json")
    assert created.status_code == 201, created.json()
    assert [kind for kind, _ in network_spy.events] == ["resolve", "resolve"]
    assert [(kind, held) for kind, held in network_spy.events if held] == []


# -- a deadline for the whole preview, and a handful of sitemaps -----------------------------------------


def test_a_preview_stops_at_its_deadline_with_a_clear_error(sites, settings, alice, collection):
    """Each response of this site arrives well within the fetcher's own timeouts; together they take
    longer than a preview may."""
    settings.KNOWLEDGE_SOURCES_PREVIEW_SECONDS = 2
    site = sites("sluggish", child_sitemaps=5)
    started = time.monotonic()
    response = preview(signed_in(alice), collection.pk, f"{site.url}/index.xml")
    elapsed = time.monotonic() - started
    assert response.status_code == 400, response.content
    assert "answered too slowly" in response.json()["error"]
    assert elapsed < 2 + LoopbackSite.SLUGGISH + 1


def test_the_preview_of_a_sitemap_index_reads_a_handful_of_its_sitemaps(sites, alice, collection):
    site = sites(child_sitemaps=40)
    response = preview(signed_in(alice), collection.pk, f"{site.url}/index.xml")
    assert response.status_code == 200, response.content
    body = response.json()
    assert 1 <= len(site.asked("/maps/")) <= 3
    assert body["items"] == [f"{site.url}/docs/map-{n}.html" for n in range(len(site.asked("/maps/")))]
    assert "sitemaps" in body["note"]


# -- a few previews at once per user ---------------------------------------------------------------------


def _in_thread(work, results: list) -> threading.Thread:
    def run():
        try:
            results.append(work())
        finally:
            connections.close_all()  # this thread's own

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_third_preview_at_once_is_refused_until_one_ends(sites, settings, alice, bob, collection):
    settings.KNOWLEDGE_SOURCES_PREVIEWS_PER_USER = 2
    site = sites("gated")
    location = f"{site.url}/docs/"
    as_alice, results = signed_in(alice), []
    waiting = [_in_thread(lambda: preview(as_alice, collection.pk, location), results) for _ in range(2)]
    site.wait_for(2, "/docs/")  # both are fetching, held by the site

    refused = preview(as_alice, collection.pk, location)
    assert refused.status_code == 429, refused.content
    assert "at most 2 previews at once" in refused.json()["error"]
    assert 1 <= int(refused["Retry-After"]) <= settings.KNOWLEDGE_SOURCES_PREVIEW_SECONDS + 60
    # Another user's previews are counted apart.
    bobs = collection_create(name="Bob's", owner=bob)
    as_bob = signed_in(bob)
    waiting.append(_in_thread(lambda: preview(as_bob, bobs.pk, location), results))
    site.wait_for(3, "/docs/")

    site.gate.set()
    for thread in waiting:
        thread.join(timeout=60)
    assert [r.status_code for r in results] == [200, 200, 200]
    assert preview(as_alice, collection.pk, location).status_code == 200  # the slots were given back


def test_a_preview_that_fails_gives_its_slot_back(sites, settings, monkeypatch, alice, collection):
    settings.KNOWLEDGE_SOURCES_PREVIEWS_PER_USER = 1
    site = sites()
    client = signed_in(alice)

    def broken(self):
        raise RuntimeError("a bug in the reader")

    with monkeypatch.context() as patched:
        patched.setattr("knowledge.source_fetch.web_reader.WebReader.preview", broken)
        with pytest.raises(RuntimeError):
            preview(client, collection.pk, f"{site.url}/docs/")
    assert preview(client, collection.pk, f"{site.url}/missing/").status_code == 400  # the site's 404
    assert preview(client, collection.pk, f"{site.url}/docs/").status_code == 200
    from accounts.models import ConcurrencySlot

    assert not ConcurrencySlot.objects.exists()  # each preview gave its slot back
