"""Inline Markdown read as styled text, never as live links or raw HTML (knowledge.text.inline_markdown)."""

from __future__ import annotations

import re

from knowledge.synthesis.citations import Citation, answer_html
from knowledge.text.inline_markdown import block_marks_removed, inline_html, inline_plain, inline_segments


def test_code_emphasis_and_strikethrough_become_styles_and_the_marks_go():
    line = "Run `manage.py migrate` to **apply** it, __not__ ~~later~~ *now*"
    assert inline_plain(line) == "Run manage.py migrate to apply it, not later now"
    assert ("manage.py migrate", ("code",)) in inline_segments(line)
    assert inline_html(line) == (
        "Run <code>manage.py migrate</code> to <strong>apply</strong> it, <strong>not</strong> "
        "<del>later</del> <em>now</em>"
    )


def test_links_show_their_address_and_never_become_links():
    line = "See [the guide](https://example.org/guide), [home](/admin/) and [x](javascript:alert(1))"
    # A script address is not a link to markdown-it at all: it stays the literal text it was.
    assert (
        inline_plain(line) == "See the guide (https://example.org/guide), home and [x](javascript:alert(1))"
    )
    assert "<a" not in inline_html(line)


def test_raw_html_and_plain_arithmetic_stay_text():
    assert inline_html("<b>bold</b> <script>alert(1)</script>") == (
        "&lt;b&gt;bold&lt;/b&gt; &lt;script&gt;alert(1)&lt;/script&gt;"
    )
    assert inline_plain("2 * 3 * 4 and a_b_c") == "2 * 3 * 4 and a_b_c"


def test_an_answers_quotes_show_their_markdown_as_text_and_keep_their_citation_links():
    passage = "Run `manage.py migrate` before the first start. Then start the server."
    citation = Citation(
        n=1,
        chunk_id=7,
        document_id=1,
        collection_id=1,
        document="guide.md",
        title="Setup",
        source_ref="heading=Setup",
        page=None,
        url="/documents/1/view/?chunk=7#setup",
        text=passage,
    )
    answer = (
        '- "Run `manage.py migrate` before the first start." [Source 1]\n'
        '- "Then `[Source 1]` is code." [Source 1]'
    )
    rendered = answer_html(answer, [citation])
    assert "<code>manage.py migrate</code>" in rendered and "`" not in rendered
    links = re.findall(r'<a class="citation" href="([^"]+)"', rendered)
    assert (
        len(links) == 2 and "quote=" in links[0]
    )  # the marker in code is code, and the next one still links
    assert "<code>[Source 1]</code>" in rendered


def test_the_block_marks_that_open_lines_are_removed_and_the_text_kept():
    text = (
        '> "Magnetic hill" redirects here.\n> > see Magnetic Hill\n## See also\n- List of hills\n'
        "12. Twelfth\n3 > 2 holds"
    )
    assert block_marks_removed(text) == (
        '"Magnetic hill" redirects here.\nsee Magnetic Hill\nSee also\nList of hills\nTwelfth\n3 > 2 holds'
    )
