"""Sentence splitting for the extractive synthesiser: whole sentences, verbatim, nothing else."""

from __future__ import annotations

from knowledge.models import Chunk, Document
from knowledge.retrieval.service import RetrievedChunk
from knowledge.synthesis.answer_cues import (
    NEGATION_TERM,
    WRONG_KIND,
    answer_cue,
    question_kind,
    question_terms,
    rarity_overlap,
    rarity_weights,
)
from knowledge.synthesis.extractive import (
    answer_type_match,
    extractive_answer,
    is_reference_list,
    normalise,
    split_sentences,
)
from knowledge.text.sentences import MAX_LIST_CHARS, MAX_LIST_ITEMS, list_after


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


def test_a_blank_line_inside_a_sentence_is_a_wrap_not_a_paragraph():
    # An OCR'd page of the corpus (Seige_of_Vicksburg_Sample_OCR.pdf, page 3) breaks its sentences so.
    text = (
        "Cannister shot is a tin cylinder with iron heads, filled with balls packed\n\n"
        "with saw-dust. The heads are movable.\n\n"
        "Grape Shot.\n\n"
        "Solid shot is strapped on a sabot."
    )
    assert split_sentences(text) == [
        "Cannister shot is a tin cylinder with iron heads, filled with balls packed with saw-dust.",
        "Solid shot is strapped on a sabot.",
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


def _scored(number, content, source_ref, filename="doc.pdf", **scores) -> RetrievedChunk:
    source = _source(number, content, source_ref, filename)
    source.scores = scores
    return source


def test_the_question_form_decides_the_answer_form():
    assert question_kind("How many queries are in AutoScholarQuery?") == "number"
    assert question_kind("What recall@20 does PaSa-7b reach on RealScholarQuery?") == "number"
    assert question_kind("When is Flag Day celebrated?") == "date"
    assert question_kind("What does the PaSa paper propose?") == "proposal"
    assert question_kind("What is a gravity hill?") == "definition"
    question = "How many queries are in AutoScholarQuery?"
    whole = "AutoScholarQuery includes 35k fine-grained academic queries and their papers."
    sample = "We sampled 100 papers to check the quality of AutoScholarQuery."
    assert answer_cue(question, whole) > answer_cue(question, sample) > 0
    gain = "PaSa-7b outperforms Google by 37.78% in Recall@20 and 39.90% in Recall@50."
    assert answer_cue("What recall@20 does PaSa-7b reach?", gain) == WRONG_KIND
    assert answer_cue("By how much does PaSa-7b beat Google in recall@20?", gain) > 0
    proposal = "In this paper, we introduce PaSa, a novel paper search agent."
    question = "What does the PaSa paper propose?"
    assert answer_cue(question, proposal, opening=True) > answer_cue(question, proposal) > 0
    assert answer_cue(question, "PaSa uses two agents, the Crawler and the Selector.") == 0.0


TABLE = (
    "Method Crawler Recall Precision Recall Recall@100 Recall@50 Recall@20 "
    "Google - - - 0.2535 0.2342 0.1834\n\n"
    "Google Scholar - - - 0.2809 0.2155 0.1514 PaSa-GPT-4o 0.5494 0.4721 0.3075 - - - "
    "PaSa-7b 0.7071 0.5146 0.6111 0.6929 0.6563 0.5798 PaSa-7b-ensemble 0.7503 0.4938 0.6488 0.7281 0.6877 "
    "0.5986 Table 6: Results on RealScholarQuery."
)


def test_a_value_asked_for_is_quoted_from_the_table_row_not_a_relative_gain_ranked_above_it():
    gains = (
        "For RealScholarQuery, PaSa-7b outperforms Google with GPT-4o by 37.78% in Recall@20 and 39.90% "
        "in Recall@50. PaSa-7b surpasses PaSa-GPT-4o by 30.36% in recall and 4.25% in precision."
    )
    sources = [_source(1, gains, "page=2", "pasa.pdf"), _source(2, TABLE, "page=8", "pasa.pdf")]
    answer = extractive_answer(
        question="What recall@20 does PaSa-7b reach on RealScholarQuery?", sources=sources
    )
    first = answer.sentences[0]
    assert (first.source_number, first.text) == (2, "PaSa-7b 0.7071 0.5146 0.6111 0.6929 0.6563 0.5798")
    assert first.text in normalise(TABLE)  # verbatim
    assert '"Table 6: Results on RealScholarQuery."' in answer.text.splitlines()[3]  # the row's caption


def test_a_spreadsheet_row_is_quoted_whole_with_its_headers():
    rows = (
        "Month: January; Rent: 1200.00; Total: 1737.50\n"
        "Month: February; Rent: 1200.00; Total: 1735.00\n"
        "Month: March; Rent: 1200.00; Total: 1742.65"
    )
    sources = [_source(1, rows, "sheet=monthly_spending", "monthly_spending.csv")]
    answer = extractive_answer(question="How much did I spend in March?", sources=sources)
    assert answer.sentences[0].text == "Month: March; Rent: 1200.00; Total: 1742.65"


def test_nothing_is_quoted_from_a_passage_under_the_floor_or_from_a_sentence_sharing_nothing():
    spending = "Month: March; Rent: 1200.00; Total: 1742.65"
    flag_day = "The flag was first raised over Parliament Hill in Ottawa on February 15, 1965."
    sources = [
        _scored(1, spending, "sheet=monthly_spending", "monthly_spending.csv", similarity=0.46),
        _scored(2, flag_day, "heading=History", "flag_day.html", similarity=0.09),
    ]
    answer = extractive_answer(question="How much did I spend in March?", sources=sources)
    assert {s.source_number for s in answer.sentences} == {1}
    # Found first by the lexical search, a passage under the cosine floor is still relevant.
    sources[1].scores["lexical_rank"] = 1
    question = "When was the flag first raised over Parliament Hill?"
    assert extractive_answer(question=question, sources=sources).sentences[0].source_number == 2
    unrelated = "Tabs and spaces are both accepted in the configuration file of the server."
    nothing = extractive_answer(
        question="Who painted the Mona Lisa?", sources=[_source(1, unrelated, "page=1")]
    )
    assert nothing.sentences == [] and nothing.text == ""


RULES = (
    "The Discharge Review Board considers an application only if it is received within 15 years of the "
    "date of discharge. If your discharge is over 15 years old, do not use this application: apply to the "
    "Board for Correction of Military Records instead."
)
BURDEN = (
    "The public reporting burden for this collection of information is estimated to average about 30 "
    "minutes per response, including the time for reviewing the instructions and completing the form."
)


def test_how_long_asks_for_a_duration_beside_the_question_words_not_an_age():
    question = "How long does it take on average to fill in the application?"
    assert question_kind(question) == "duration"
    assert question_terms(question) == {"averag", "fill", "applic"}  # not "how long does it take"
    rules = split_sentences(RULES)
    assert answer_cue(question, BURDEN) == 1.0  # "average about 30 minutes"
    assert answer_cue(question, rules[0]) == 0.5  # "15 years", far from any word of the question
    assert answer_cue(question, rules[1]) == 0.0  # "15 years old" is an age


def test_a_later_passage_leads_when_its_sentence_answers_clearly_better():
    sources = [
        _source(1, RULES, "heading=Time limits", "form.md"),
        _source(2, BURDEN, "heading=Burden", "form.md"),
    ]
    answer = extractive_answer(
        question="How long does it take on average to fill in the application?", sources=sources
    )
    assert answer.sentences[0].source_number == 2
    assert "about 30 minutes" in answer.sentences[0].text


def test_each_form_of_question_asks_for_its_form_of_answer():
    assert question_kind("Who founded the Django Software Foundation?") == "name"
    assert question_kind("Which organisation reviews the application?") == "name"
    assert question_kind("Who is Barack Obama?") == "definition"
    assert question_kind("What are these lines called?") == "definition"
    assert question_kind("What happens if the session expires?") == "consequence"
    assert question_kind("What happens when the session expires?") == "consequence"
    assert question_kind("How many minutes does it take?") == "duration"
    question = "Which organisation reviews the application?"
    assert answer_cue(question, "Applications are reviewed by the Discharge Review Board.") == 1.0
    assert answer_cue(question, "Applications are reviewed twice a year.") == 0.0
    question = "What happens if the session expires?"
    assert answer_cue(question, "If the session expires, the user is logged out.") == 1.0
    assert answer_cue(question, "Sessions are stored in the database by default.") == 0.0
    assert answer_cue("What are these lines called?", "These lines are called contours.") == 1.0
    question = "What causes the gravity hill illusion?"
    assert question_kind(question) == "consequence"
    cause = "The most important factor contributing to the illusion is a mostly obstructed horizon."
    assert answer_cue(question, cause) == 1.0


def test_a_negation_in_the_question_is_one_of_its_words():
    assert question_terms("What can't pdfplumber do?") == {"pdfplumber", NEGATION_TERM}
    candidates = [
        "pdfplumber supports visual debugging of its objects.",
        "pdfplumber does not provide PDF generation or modification.",
    ]
    weights = rarity_weights("What can't pdfplumber do?", candidates)
    assert rarity_overlap(weights, candidates[1]) == 1.0 > rarity_overlap(weights, candidates[0])


LISTED = (
    "Several other Python libraries help users to extract information from PDFs.\n\n"
    "It's also helpful to know what features `pdfplumber` does __not__ provide:\n\n"
    "- PDF *generation*\n"
    "- PDF *modification*\n"
    "- Optical character recognition (OCR)\n\n"
    "### Specific comparisons\n\n"
    "- pdfminer.six provides the foundation for pdfplumber."
)


def test_a_sentence_that_introduces_a_list_is_quoted_with_the_list():
    answer = extractive_answer(
        question="Which features does pdfplumber not provide?",
        sources=[_source(1, LISTED, "heading=Comparison to other libraries", "README.md")],
    )
    quoted = answer.sentences[0].text
    assert quoted == (
        "It's also helpful to know what features `pdfplumber` does __not__ provide: "
        "- PDF *generation* - PDF *modification* - Optical character recognition (OCR)"
    )
    assert quoted in normalise(LISTED)  # verbatim; the list ends where its items do


def test_a_quoted_list_is_bounded_by_whole_items():
    items = "\n".join(f"- item number {n} of a long list of things" for n in range(40))
    text = "These are all the items of the very long list below:\n" + items
    listed = list_after("These are all the items of the very long list below:", text)
    assert listed.startswith("- item number 0 ") and listed.endswith("of a long list of things")
    assert len(listed) <= MAX_LIST_CHARS and listed.count("- item") <= MAX_LIST_ITEMS
    assert (
        list_after("A sentence that ends with a full stop.", "A sentence that ends with a full stop.\n- x")
        == ""
    )


def test_a_record_ranked_first_leads_over_a_closer_sentence_of_prose():
    # A record is matched whole: its cosine to the question is lower than a sentence's
    # (0.47 against 0.61 here) and says less about whether it answers.
    operation = (
        "DELETE /pets/{id}\n\nOperation ID: deletePet\n\ndeletes a single pet based on the ID supplied\n\n"
        "Parameters:\n- id (path, integer, int64, required): ID of pet to delete\n\n"
        "Responses:\n- 204: pet deleted\n- default: unexpected error; body: Error"
    )
    prose = "``delete()`` returns ``True`` if the key was successfully deleted, ``False`` otherwise."
    sources = [
        _source(1, operation, "operation=DELETE /pets/{id}", "petstore.json"),
        _source(2, prose, "section=Basic usage", "cache.txt"),
    ]
    answer = extractive_answer(question="what status code does deletePet return on success", sources=sources)
    assert answer.sentences[0].source_number == 1


def test_a_quoted_continuation_is_numbered_right_after_the_sources_and_listed_with_them():
    """[Source N] is the N-th listed passage: the sources keep their numbers, a continuation that is
    quoted is numbered after them, and one that is not quoted takes no number (no gap in the list)."""

    def continuation(number: int, continues: int, content: str) -> RetrievedChunk:
        chunk = _source(number, content, "heading=History", "flag_day.html").chunk
        return RetrievedChunk(chunk, {"continues": continues}, role="continuation", source_number=number)

    sources = [
        _source(1, "National Flag of Canada Day", "heading=History", "flag_day.html"),
        _source(2, "Tabs and spaces are both accepted in the configuration file.", "page=1", "a.pdf"),
        continuation(3, 2, "The server reads its configuration file once, when it starts."),
        continuation(4, 1, "The flag was first raised over Parliament Hill in Ottawa on February 15, 1965."),
    ]
    answer = extractive_answer(
        question="When was the flag first raised over Parliament Hill?", sources=sources
    )
    assert '"The flag was first raised over Parliament Hill in Ottawa on February 15, 1965." [Source 3]' in (
        answer.text
    )
    assert "[Source 4]" not in answer.text
    assert [(p.source_number, p.chunk.pk) for p in answer.passages] == [(1, 1), (2, 2), (3, 4)]
    assert {(c.n, c.chunk_id) for c in answer.citations} >= {(3, 4)}
    assert sources[3].source_number == 4  # the caller's list is left as it was
