"""A quoted sentence's place in its passage: found whatever its white space, read back from a link."""

from __future__ import annotations

import pytest

from knowledge.synthesis.quotes import MAX_QUOTE, quote_range_format, quote_range_parse, quote_span

PASSAGE = "PaSa is a paper\nsearch agent.  It calls\n tools (a) [b]*."


def test_a_quote_is_found_whatever_its_white_space():
    start = PASSAGE.index("It")
    assert quote_span("It calls tools (a) [b]*.", PASSAGE) == (start, len(PASSAGE))
    assert quote_span("  It calls\ttools ", PASSAGE) == (start, PASSAGE.index(" (a)"))
    assert quote_span("(a) [b]*", PASSAGE) is not None  # the quote is text, not a pattern
    assert quote_span("It writes poems.", PASSAGE) is None
    assert quote_span("", PASSAGE) is None
    assert quote_span("It " + " " * MAX_QUOTE + "calls", PASSAGE) is None  # no quote is that long


def test_a_link_range_round_trips():
    span = quote_span("search agent.", PASSAGE)
    assert quote_range_parse(quote_range_format(span), PASSAGE) == span


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "3",
        "3-",
        "-3",
        "a-b",
        "5-3",
        "3-3",
        f"0-{len(PASSAGE) + 1}",
        "15-16",
        "0-1;drop",
        "1-2 ",
        "９-１０",
    ],
)
def test_anything_but_a_range_of_the_passage_is_no_quote(raw):
    assert quote_range_parse(raw, PASSAGE) is None  # "15-16" is only white space
