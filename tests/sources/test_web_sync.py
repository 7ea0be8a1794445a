"""A web site as a source: a real HTTP server on 127.0.0.1 serves 30 pages made of corpus documents,
with a sitemap and a robots.txt that keeps one path out; syncs are incremental."""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from knowledge.models import Document, Source, SourceItem
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, source_add, source_sync
from knowledge.synthesis.citations import citation_for
from tests.asking import request_for
from tests.conftest import CORPUS

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.synthesis.openai_server"]

RELEASES = sorted((CORPUS / "django-docs" / "releases").glob("1.*.txt"), key=lambda p: p.stat().st_size)[:24]


def release_page(path: Path) -> bytes:
    text = path.read_text(encoding="utf-8")
    paragraphs = "".join(f"<p>{html.escape(p.strip())}</p>" for p in text.split("\n\n") if p.strip())
    title = html.escape(text.splitlines()[1] if text.startswith("=") else path.stem)
    return (
        f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{paragraphs}</body></html>".encode()
    )


def build_site(root: Path) -> list[str]:
    """30 pages: 4 corpus HTML pages, a Markdown page, 24 release notes and one under /private/."""
    pages: dict[str, bytes] = {}
    for path in sorted((CORPUS / "html").glob("*.html")):
        pages[f"docs/{path.name}"] = path.read_bytes()
    pages["docs/gravity_hill.md"] = (CORPUS / "text" / "gravity_hill.md").read_bytes()
    for path in RELEASES:
        pages[f"docs/releases/{path.stem}.html"] = release_page(path)
    pages["private/secret.html"] = (
        b"<html><body><h1>Secret</h1><p>Never to be read by the sync.</p></body></html>"
    )
    for name, data in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    return sorted(pages)


def write_sitemap(root: Path, base: str, names: list[str]) -> None:
    urls = "".join(f"<url><loc>{base}/{name}</loc></url>" for name in names)
    (root / "sitemap.xml").write_text(
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".md": "text/markdown"}

    def log_message(self, *args):
        pass


@pytest.fixture
def site(tmp_path, settings):
    settings.KNOWLEDGE_SOURCES_ALLOWED_NETWORKS = "127.0.0.0/8"
    root = tmp_path / "site"
    root.mkdir()
    names = build_site(root)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=root)
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    write_sitemap(root, base, names)
    yield root, base, names
    server.shutdown()


def touch_later(path: Path) -> None:
    """A change the server's Last-Modified (whole seconds) can tell from the previous version."""
    later = time.time() + 10
    os.utime(path, (later, later))


def test_a_site_syncs_incrementally_and_respects_robots(site, alice, no_llm):
    root, base, names = site
    collection = collection_create(name="site", owner=alice)
    source = source_add(
        collection=collection, spec=SourceSpec(location=f"{base}/sitemap.xml", grace_hours=0), user=alice
    )
    assert source.kind == Source.Kind.WEB

    first = source_sync(source=source, trigger="test", wait=True)
    assert first.status == "succeeded", first.error
    assert (first.added, first.failed, first.errors) == (29, 0, [])
    ready = Document.objects.filter(collection=collection, status=Document.Status.READY)
    assert ready.count() == 29
    assert not SourceItem.objects.filter(key__contains="/private/").exists()
    item = SourceItem.objects.get(source=source, key=f"{base}/docs/flag_day.html")
    assert item.document.origin_url == f"{base}/docs/flag_day.html"
    # A citation links to the original page as well as to the stored copy.
    context = retrieve(
        user=alice,
        request=request_for(
            alice, question="When is Flag Day in Canada?", collection_ids=[collection.pk], k=3
        ),
    )
    cited = citation_for(context.primary_chunks[0])
    assert cited.document_id == item.document_id and cited.origin_url == f"{base}/docs/flag_day.html"
    client = Client()
    client.force_login(alice)
    passage = client.get(f"/documents/{cited.document_id}/passage/?chunk={cited.chunk_id}").json()
    assert passage["origin_url"] == f"{base}/docs/flag_day.html"
    api = APIClient()
    api.force_authenticate(alice)
    answer = api.post(
        "/api/v1/query/",
        {"question": "When is Flag Day in Canada?", "collections": [collection.pk]},
        format="json",
    ).json()
    assert f"{base}/docs/flag_day.html" in [c["origin_url"] for c in answer["citations"]], answer

    # One page changes, one is deleted (and leaves the sitemap).
    changed = root / "docs" / "gravity_hill.md"
    changed.write_text(changed.read_text() + "\n\nA new paragraph about magnetic hills.\n")
    touch_later(changed)
    (root / "docs" / "apache.html").unlink()
    write_sitemap(root, base, [n for n in names if n != "docs/apache.html"])
    second = source_sync(source=source, trigger="test", wait=True)
    assert (second.added, second.updated, second.deleted, second.failed) == (0, 1, 1, 0), second.errors
    assert second.unchanged == 27
    new_version = SourceItem.objects.get(source=source, key=f"{base}/docs/gravity_hill.md").document
    assert second.chunks_embedded == new_version.chunks.count() > 0
    assert Document.objects.filter(collection=collection, status=Document.Status.READY).count() == 28
    assert not Document.objects.filter(collection=collection, filename__contains="apache").exists()

    # Nothing changed: nothing embedded, nothing fetched again but the validators.
    started = time.perf_counter()
    third = source_sync(source=source, trigger="test", wait=True)
    seconds = time.perf_counter() - started
    assert (third.added, third.updated, third.deleted, third.unchanged, third.chunks_embedded) == (
        0,
        0,
        0,
        28,
        0,
    )
    print(f"third sync, nothing changed: {seconds:.2f} s")


def test_the_command_adds_the_source_syncs_it_and_prints_one_json_object(site, alice, capsys):
    _root, base, _names = site
    call_command(
        "knowledge_sync", "--collection", "site docs", "--create", "--owner", alice.username,
        "--source", f"{base}/docs/flag_day.html", "--wait", "--json",
    )  # fmt: skip
    report = json.loads(capsys.readouterr().out.strip())
    assert set(report) == {
        "source",
        "added",
        "updated",
        "unchanged",
        "deleted",
        "failed",
        "chunks_embedded",
        "errors",
    }
    assert report["added"] >= 1 and report["failed"] == 0 and report["chunks_embedded"] > 0
    # Run again: the source is found, not added twice, and nothing is embedded.
    call_command(
        "knowledge_sync", "--collection", "site docs", "--owner", alice.username,
        "--source", f"{base}/docs/flag_day.html", "--wait", "--json",
    )  # fmt: skip
    again = json.loads(capsys.readouterr().out.strip())
    assert again["source"] == report["source"] and again["chunks_embedded"] == 0
    assert Source.objects.filter(pk=report["source"]).count() == 1
