"""Sentence splitting for the extractive synthesiser: whole sentences, verbatim, nothing else."""

from __future__ import annotations

from knowledge.models import Chunk, Document
from knowledge.retrieval.service import RetrievedChunk
from knowledge.synthesis.extractive import (
    answer_type_match,
    extractive_answer,
    is_reference_list,
    normalise,
    split_sentences,
)


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


def _source(number: int, content: str, source_ref: str, filename: str = "doc.html") -> RetrievedChunk:
    """An unsaved chunk as retrieval returns it: the extractive answer reads nothing else."""
    document = Document(pk=number, filename=filename, title="")
    chunk = Chunk(pk=number, document=document, collection_id=1, content=content, source_ref=source_ref)
    return RetrievedChunk(chunk, {}, source_number=number)


REFERENCE_LIST = (
    '^ "Obama got start in civil rights practice". The Boston Globe. Retrieved June 15, 2008.\n\n'
    '^ Smith, Ben (May 2, 2008). "Law firm years". Politico. Archived from the original on May 4, 2008.\n\n'
    '^ "Obama, the civil rights lawyer". Chicago Tribune. Retrieved March 3, 2009.'
)


def test_a_reference_list_is_never_quoted_even_when_ranked_first():
    assert is_reference_list(REFERENCE_LIST)
    assert not is_reference_list(
        "He joined a law firm in 1993. He stayed there for three years as an associate."
    )
    sources = [
        _source(1, REFERENCE_LIST, "heading=References"),
        _source(
            2,
            "He joined Davis, Miner, Barnhill & Galland, a civil rights law firm, in 1993.",
            "heading=Career",
        ),
    ]
    answer = extractive_answer(question="Which civil rights law firm did Obama join?", sources=sources)
    assert [s.source_number for s in answer.sentences] == [2]
    assert "Retrieved" not in answer.text


def test_the_most_relevant_api_operation_leads_not_simply_the_first():
    sources = [
        _source(
            1,
            "GET /pets/{id}\n\nOperation ID: findPetById\n\nReturns one pet by its ID.",
            "operation=GET /pets/{id}",
            "petstore.json",
        ),
        _source(
            2,
            "DELETE /pets/{id}\n\nOperation ID: deletePet\n\nDeletes a single pet based on the ID supplied.",
            "operation=DELETE /pets/{id}",
            "petstore.json",
        ),
    ]
    answer = extractive_answer(question="Which operation deletes a pet?", sources=sources)
    assert answer.sentences[0].source_number == 2
    assert answer.sentences[0].text.startswith("DELETE /pets/{id}")


def test_a_page_without_sentences_does_not_lead():
    glossary = (
        "ABBREVIATIONS\nLRM Linear Reference Method\nLRS Linear Reference System\nNID National Identifier"
    )
    prose = "The Linear Reference System is the most viable approach when several organizations are involved."
    sources = [_source(1, glossary, "page=5", "model.pdf"), _source(2, prose, "page=6", "model.pdf")]
    answer = extractive_answer(question="Why is a linear reference system used?", sources=sources)
    assert answer.sentences[0].source_number == 2


def test_the_best_chunk_leads_over_a_restatement_further_down():
    # A later page restating the topic in the question's own words must not lead: the retrieval,
    # which read whole chunks, ranked the page holding the figures first.
    figures = (
        "We generated 3,011 search session trajectories and 9,978 expand session trajectories. "
        "These were used to train the model."
    )
    restatement = "The crawler is first trained by imitation learning, then by reinforcement learning."
    sources = [_source(1, figures, "page=12", "pasa.pdf"), _source(2, restatement, "page=5", "pasa.pdf")]
    question = "How many session trajectories were generated for the crawler's imitation learning?"
    answer = extractive_answer(question=question, sources=sources)
    assert answer.sentences[0].source_number == 1
    assert answer.sentences[0].text.startswith("We generated 3,011")


def test_japanese_sentences_end_at_their_full_stops_and_are_quoted_verbatim():
    text = (
        "LangChainは、LLMアプリケーション開発を容易にするフレームワークである。特に、複数のコンポーネントを"
        "連結（Chain）する機能が強力である。 一方、LangGraphは状態を持つエージェントを定義できる。\n"
        "短い。"
    )
    sentences = split_sentences(text)
    assert sentences == [
        "LangChainは、LLMアプリケーション開発を容易にするフレームワークである。",
        "特に、複数のコンポーネントを連結（Chain）する機能が強力である。",
        "一方、LangGraphは状態を持つエージェントを定義できる。",
    ]
    for sentence in sentences:
        assert sentence in normalise(text)
    korean = "하이브리드 검색은 키워드 검색과 벡터 검색을 결합한다. 그래서 정확도가 크게 향상된다."
    assert split_sentences(korean) == [
        "하이브리드 검색은 키워드 검색과 벡터 검색을 결합한다.",
        "그래서 정확도가 크게 향상된다.",
    ]
