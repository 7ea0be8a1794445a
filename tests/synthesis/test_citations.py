"""[Source N] parsing, validation against the context, location links and the answer's HTML."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from knowledge.retrieval.passages import source_url
from knowledge.synthesis.citations import answer_html, marker_numbers, resolve_citations, saved_answer_html


def source(n: int, *, filename="a.pdf", source_ref="page=3", page=3, chunk_id=None, document_id=None):
    """A retrieved chunk as the citation code reads it (the attributes of RetrievedChunk)."""
    document = SimpleNamespace(
        pk=document_id or 100 + n, filename=filename, display_title=filename.upper(), origin_url=""
    )
    chunk = SimpleNamespace(
        pk=chunk_id or 1000 + n,
        document=document,
        document_id=document.pk,
        collection_id=7,
        source_ref=source_ref,
        page=page,
        content=f"content of source {n}",
    )
    return SimpleNamespace(chunk=chunk, source_number=n)


@pytest.mark.parametrize(
    "body, expected",
    [
        ("1", [1]),
        ("1, 3", [1, 3]),
        ("1-3", [1, 2, 3]),
        ("4–2", [2, 3, 4]),
        ("1 and Source 2", [1, 2]),
        ("2; Source 5", [2, 5]),
        ("1-1000", [0]),  # an absurd range is one bad number, not a thousand
    ],
)
def test_marker_numbers(body, expected):
    assert marker_numbers(body) == expected


def test_valid_markers_are_kept_and_only_cited_sources_listed():
    sources = [source(1), source(2, filename="b.docx", source_ref="heading=Intro", page=None), source(3)]
    result = resolve_citations("Alpha [Source 3]. Beta [source 1]. Gamma [Sources 1, 3].", sources)
    assert result.text == "Alpha [Source 3]. Beta [Source 1]. Gamma [Source 1][Source 3]."
    assert [c.n for c in result.citations] == [1, 3]  # source 2 was not cited
    assert result.dropped == 0
    first = result.citations[0]
    assert (first.document, first.source_ref, first.chunk_id, first.document_id) == (
        "a.pdf",
        "page=3",
        1001,
        101,
    )
    assert first.text == "content of source 1"


def test_markers_to_no_retrieved_source_are_removed_and_counted():
    sources = [source(1), source(2)]
    text = "One [Source 7]. Two [Source 2, 9]. Three [Sources 1-4]. Four [Source 0].\nFive [Source 2]"
    result = resolve_citations(text, sources)
    assert result.text == "One. Two [Source 2]. Three [Source 1][Source 2]. Four.\nFive [Source 2]"
    assert result.dropped == 5  # 7, 9, 3, 4, 0
    assert [c.n for c in result.citations] == [1, 2]


def test_text_that_only_looks_like_a_citation_is_left_alone():
    result = resolve_citations("See [1] and [Source A] and Source 1.", [source(1)])
    assert result.text == "See [1] and [Source A] and Source 1."
    assert result.citations == [] and result.dropped == 0


@pytest.mark.parametrize(
    "source_ref, page, fragment",
    [
        ("page=12", 12, "#page=12"),
        ("slide=4", None, "#slide=4"),
        ("sheet=Q1 Sales", None, "#sheet=Q1%20Sales"),
        ("heading=Getting started: the basics", None, "#getting-started-the-basics"),
        ("heading=はじめに", None, "#%E3%81%AF%E3%81%98%E3%82%81%E3%81%AB"),
        ("section=Part 2", None, "#section=Part%202"),
        ("operation=GET /users/{id}", None, "#operation=GET%20/users/{id}"),
        ("component=schemas/User", None, "#component=schemas/User"),
    ],
)
def test_each_citation_links_to_its_location(source_ref, page, fragment):
    chunk = source(1, source_ref=source_ref, page=page, chunk_id=55, document_id=9).chunk
    assert source_url(chunk) == f"/documents/9/view/?chunk=55{fragment}"


def test_answer_html_is_escaped_and_links_citations():
    citations = resolve_citations("x [Source 1]", [source(1)]).citations
    html = answer_html(
        "Intro <script>alert(1)</script> is **bold** [Source 1] [Source 4].\n\n"
        "- item one [Source 1]\n- item two",
        citations,
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert (
        '<a class="citation" href="/documents/101/view/?chunk=1001#page=3" data-source="1">[Source 1]</a>'
        in html
    )
    assert "[Source 4]" in html and 'data-source="4"' not in html  # no such citation: not a link
    assert "<strong>bold</strong>" in html
    assert html.count("<li>") == 2 and "<ul>" in html


def test_a_quoted_sentence_travels_in_its_citation_link_as_offsets_in_the_passage():
    cited = source(1)
    cited.chunk.content = "Intro.\nIt holds 33,511\npairs & more. A second <b>quote</b>. End."
    citations = resolve_citations("x [Source 1]", [cited]).citations
    text = 'Extracted:\n\n- "It holds 33,511 pairs & more." [Source 1]\n- "A second <b>quote</b>." [Source 1]'
    first, second = re.findall(r'href="([^"]+)"', answer_html(text, citations))
    content = cited.chunk.content
    start = content.index("It holds")
    assert first == f"/documents/101/view/?chunk=1001&amp;quote={start}-{content.index(' A second')}#page=3"
    start, end = re.search(r"quote=(\d+)-(\d+)", second).groups()
    assert content[int(start) : int(end)] == "A second <b>quote</b>."
    # A saved turn's answer links the same way, from the citations stored with it.
    stored = [c.as_dict() for c in citations]
    assert re.findall(r'href="([^"]+)"', saved_answer_html(text, stored)) == [first, second]


def test_a_marker_after_unquoted_or_unfound_text_links_to_the_passage_alone():
    citations = resolve_citations("x [Source 1]", [source(1)]).citations
    html = answer_html('He said "yes" and then left [Source 1]. "Not in the passage." [Source 1]', citations)
    assert html.count('href="/documents/101/view/?chunk=1001#page=3"') == 2
