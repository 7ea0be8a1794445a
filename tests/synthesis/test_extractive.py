"""Sentence splitting for the extractive synthesiser: whole sentences, verbatim, nothing else."""

from __future__ import annotations

from knowledge.synthesis.extractive import answer_type_match, normalise, split_sentences


def test_sentences_are_verbatim_runs_of_the_text():
    text = (
        "National Flag of Canada Day, commonly shortened to Flag Day, is observed annually on "
        "February 15.[1] The day is marked by flying the flag.\n"
        "Dr. Smith wrote the first history of the day in 1996. It was short!"
    )
    sentences = split_sentences(text)
    assert sentences == [
        "National Flag of Canada Day, commonly shortened to Flag Day, is observed annually on "
        "February 15.[1]",
        "The day is marked by flying the flag.",
        "Dr. Smith wrote the first history of the day in 1996.",
    ]
    for sentence in sentences:
        assert sentence in normalise(text)


def test_fragments_headings_and_rows_are_not_quoted():
    text = (
        "making a slight downhill slope appear to be an uphill slope.\n"  # tail of a cut sentence
        "Thus, a car left out of gear will appear to be rolling uphill.\n\n"
        "National Flag of Canada Day\n"
        "Observed by; Canada\n"
        "Date; February 15\n\n"
        "The most important factor contributing to the illusion is a completely"  # cut at the end
    )
    assert split_sentences(text) == ["Thus, a car left out of gear will appear to be rolling uphill."]


def test_lines_wrapped_inside_a_sentence_are_joined():
    text = (
        "Although the slope of gravity hills is an illusion,\n"
        "sites are often accompanied by claims\n"
        "that magnetic forces are at work."
    )
    assert split_sentences(text) == [
        "Although the slope of gravity hills is an illusion, sites are often accompanied by claims "
        "that magnetic forces are at work."
    ]


def test_captions_footnotes_references_and_boilerplate_are_not_quoted():
    text = (
        "Figure 1: Architecture of PaSa, with both agents shown.\n\n"
        "Wikimedia Commons has media related to Flag of Canada Day.\n\n"
        "Retrieved 15 February 2020 from the Government of Canada website.\n\n"
        "Smith et al. (2020) describe a similar crawler in detail.\n\n"
        "PaSa consists of two agents, the Crawler and the Selector."
    )
    assert split_sentences(text) == ["PaSa consists of two agents, the Crawler and the Selector."]


def test_the_sentence_of_the_kind_asked_for_counts():
    assert answer_type_match("How many query-paper pairs are there?", "It has 33,511 pairs.") == 1.0
    assert answer_type_match("How many query-paper pairs are there?", "It has many pairs.") == 0.0
    assert answer_type_match("When is Flag Day observed?", "It is observed on February 15.") == 1.0
    assert answer_type_match("What is a gravity hill?", "A gravity hill is a place where...") == 1.0
    assert answer_type_match("Which agents are there?", "The Crawler and the Selector.") == 0.0
