"""The cited section's text for the viewer: overlaps shown once, the quoted sentence marked."""

from __future__ import annotations

from types import SimpleNamespace

from knowledge.web.passages import overlap_length, section_parts

FIRST = "PaSa is a paper search agent. It calls tools. The crawler expands citations of each paper."
SECOND = "The crawler expands citations of each paper. The selector reads every paper it finds."
THIRD = "The selector reads every paper it finds. It keeps those that answer the query."


def chunks(*texts: str) -> list:
    return [SimpleNamespace(pk=10 + i, content=text) for i, text in enumerate(texts)]


def shown(parts) -> str:
    return " | ".join(part.before + part.quote + part.after for part in parts)


def test_the_overlap_is_the_longest_end_of_the_earlier_chunk_that_starts_the_later_one():
    assert overlap_length(FIRST, SECOND) == len("The crawler expands citations of each paper.")
    assert overlap_length(FIRST, THIRD) == 0
    assert overlap_length("ends with the", "the start") == 0  # a coincidence under MIN_OVERLAP


def test_each_overlap_is_shown_once_and_the_cited_passage_stays_whole():
    section = chunks(FIRST, SECOND, THIRD)
    text = shown(section_parts(section, cited_id=11))
    assert text.count("The crawler expands citations of each paper.") == 1
    assert text.count("The selector reads every paper it finds.") == 1
    cited = next(part for part in section_parts(section, cited_id=11) if part.cited)
    assert cited.before == SECOND  # the seams on both sides belong to the cited chunk
    first = section_parts(section, cited_id=10)
    assert first[0].before == FIRST and first[1].before == "The selector reads every paper it finds."


def test_the_quote_is_marked_in_the_cited_chunk_only():
    passage = "PaSa is a paper\nsearch agent.  It calls\n tools."
    start = passage.index("It")
    parts = section_parts(chunks(passage, THIRD), cited_id=10, quote=(start, len(passage)))
    assert (parts[0].before, parts[0].quote, parts[0].after) == (
        "PaSa is a paper\nsearch agent.  ",
        passage[start:],
        "",
    )
    assert parts[1].quote == "" and parts[1].before == THIRD
