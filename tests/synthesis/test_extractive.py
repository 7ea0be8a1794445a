"""Sentence splitting for the extractive synthesiser: whole sentences, verbatim, nothing else."""

from __future__ import annotations

from knowledge.synthesis.extractive import normalise, split_sentences


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
