"""A context block's token count, computed from its parts (the passage's part kept per process), is
the count of the whole block's text: for every section of real documents in several formats and
scripts, and for passages with edge whitespace."""

from __future__ import annotations

import pytest

from knowledge.ingestion.extract import extract_sections
from knowledge.retrieval.context import assemble, block_tokens, format_block
from knowledge.text.token_counts import llm_token_count
from tests.conftest import CORPUS

DOCUMENTS = [
    "pdf/pasa.pdf",
    "office/dummy.xlsx",  # Japanese cells
    "html/apache.html",
    "django-docs/topics/signals.txt",
    "openapi/petstore-expanded-3.0.json",
    "text/gravity_hill.md",
]


def _blocks():
    for path in DOCUMENTS:
        data = (CORPUS / path).read_bytes()
        for number, section in enumerate(extract_sections(path.rsplit("/", 1)[-1], data), start=1):
            yield (
                number,
                {
                    "title": "A title: with “quotes” and 日本語",
                    "filename": path.rsplit("/", 1)[-1],
                    "source_ref": section.source_ref,
                    "content": section.text,
                },
            )


@pytest.mark.parametrize("path", DOCUMENTS)
def test_a_blocks_count_from_its_parts_is_the_whole_texts_count(path):
    checked = 0
    for number, item in _blocks():
        if item["filename"] != path.rsplit("/", 1)[-1]:
            continue
        whole = llm_token_count(format_block(number, **item))
        assert block_tokens(number, **item) == whole, item["source_ref"]
        checked += 1
    assert checked > 0


@pytest.mark.parametrize(
    "content",
    [
        "\n\n  leading and trailing blank lines \n\n",
        "\tTabbed\n\n\nlines\r\nand CRLF\r\n",
        "emoji 🙂\u200b end",
        " ",
    ],
)
def test_edge_whitespace_counts_exactly(content):
    item = {"title": "", "filename": "a.txt", "source_ref": "section=A", "content": content}
    for number in (1, 9, 10, 123):
        assert block_tokens(number, **item) == llm_token_count(format_block(number, **item))


def test_assemble_totals_the_blocks_it_keeps():
    items = [item for _, item in _blocks()][:40]
    blocks, total = assemble(items, max_tokens=3000)
    assert blocks and total == sum(llm_token_count(block.text) for _, block in blocks) <= 3000
