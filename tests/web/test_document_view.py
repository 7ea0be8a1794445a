"""The source viewer's page (Django test client): the quoted sentence marked, anything else ignored."""

from __future__ import annotations

import html
import json
import re

import pytest

from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.synthesis.quotes import quote_range_format, quote_span
from knowledge.text.sentences import split_sentences

pytestmark = pytest.mark.django_db(transaction=True)


def uploaded(owner, corpus, relative: str):
    collection = collection_create(name="docs", owner=owner)
    path = corpus / relative
    return document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    ).document


def viewer_data(page: str) -> dict:
    return json.loads(
        re.search(r'id="pdf-viewer-data" type="application/json">(.*?)</script>', page).group(1)
    )


def test_a_quote_of_the_cited_passage_is_marked_in_it(client, alice, corpus):
    document = uploaded(alice, corpus, "text/gravity_hill.md")
    chunk = next(c for c in document.chunks.order_by("index") if split_sentences(c.content))
    quote = split_sentences(chunk.content)[-1]
    where = quote_range_format(quote_span(quote, chunk.content))
    client.force_login(alice)
    page = client.get(f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": where}).content.decode()
    marked = re.search(r'<mark class="quote">(.*?)</mark>', page, re.S).group(1)
    assert " ".join(html.unescape(marked).split()) == quote
    assert "pdf-viewer-data" not in page  # not a PDF: the section's text alone


@pytest.mark.parametrize("quote", ['<script>alert("x")</script>', "0-999999", "12-5", "1-2-3"])
def test_a_quote_that_is_not_a_range_of_the_passage_is_ignored(client, alice, corpus, quote):
    document = uploaded(alice, corpus, "text/gravity_hill.md")
    chunk = document.chunks.order_by("index").first()
    client.force_login(alice)
    response = client.get(f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": quote})
    page = response.content.decode()
    assert response.status_code == 200
    assert "<mark" not in page and "<script>alert" not in page and 'id="cited"' in page


def test_a_pdf_citation_gives_the_viewer_its_page_passage_and_quote(client, alice, corpus):
    document = uploaded(alice, corpus, "pdf/pasa.pdf")
    chunk = document.chunks.filter(page=5).order_by("index").first()
    start, end = quote_span(split_sentences(chunk.content)[0], chunk.content)
    client.force_login(alice)
    where = f"{start}-{end}"
    page = client.get(f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": where}).content.decode()
    data = viewer_data(page)
    assert data == {
        "file": f"/documents/{document.pk}/file/",
        "page": 5,
        "passage": chunk.content,
        "quote": chunk.content[start:end],
        "assets": "/static/vendor/pdfjs/",
    }
    assert "<iframe" not in page and 'type="module"' in page
    foreign = client.get(f"/documents/{document.pk}/view/", {"chunk": chunk.pk, "quote": "Not a range."})
    assert viewer_data(foreign.content.decode())["quote"] == ""
