"""The source viewer's page (Django test client): the quoted sentence marked, anything else ignored."""

from __future__ import annotations

import html
import json
import re

import pytest

from knowledge.services.collections import collection_create
from knowledge.services.documents import document_upload
from knowledge.synthesis.extractive import split_sentences

pytestmark = pytest.mark.django_db(transaction=True)


def uploaded(owner, corpus, relative: str):
    collection = collection_create(name="docs", owner=owner)
    path = corpus / relative
    return document_upload(collection=collection, filename=path.name, data=path.read_bytes()).document


def viewer_data(page: str) -> dict:
    return json.loads(
        re.search(r'id="pdf-viewer-data" type="application/json">(.*?)</script>', page).group(1)
    )


def test_a_quote_of_the_cited_passage_is_marked_in_it(client, alice, corpus):
    document = uploaded(alice, corpus, "text/gravity_hill.md")
    chunk = next(c for c in document.chunks.order_by("index") if split_sentences(c.content))
    quote = split_sentences(chunk.content)[-1]
    client.force_login(alice)
    page = client.get(f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": quote}).content.decode()
    marked = re.search(r'<mark class="quote">(.*?)</mark>', page, re.S).group(1)
    assert " ".join(html.unescape(marked).split()) == quote
    assert "pdf-viewer-data" not in page  # not a PDF: the section's text alone


def test_a_quote_that_is_not_in_the_passage_is_ignored_and_never_markup(client, alice, corpus):
    document = uploaded(alice, corpus, "text/gravity_hill.md")
    chunk = document.chunks.order_by("index").first()
    client.force_login(alice)
    hostile = '<script>alert("x")</script> "quoted" & more'
    page = client.get(
        f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": hostile}
    ).content.decode()
    assert "<mark" not in page and "<script>alert" not in page and 'id="cited"' in page


def test_a_pdf_citation_gives_the_viewer_its_page_passage_and_quote(client, alice, corpus):
    document = uploaded(alice, corpus, "pdf/pasa.pdf")
    chunk = document.chunks.filter(page=5).order_by("index").first()
    quote = split_sentences(chunk.content)[0]
    client.force_login(alice)
    page = client.get(f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": quote}).content.decode()
    data = viewer_data(page)
    assert data == {
        "file": f"/documents/{document.pk}/file/",
        "page": 5,
        "passage": chunk.content,
        "quote": quote,
        "assets": "/static/vendor/pdfjs/",
    }
    assert "<iframe" not in page and 'type="module"' in page
    foreign = client.get(f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": "Not in it at all."})
    assert viewer_data(foreign.content.decode())["quote"] == ""
