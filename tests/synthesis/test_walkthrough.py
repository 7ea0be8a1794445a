"""A new user's first session without a language model: six corpus files and a small spending CSV,
eleven questions asked in the chat the way a person would ask them.

The answer's first quoted sentence must answer (the figure, the date, the definition, the proposal),
a question the documents do not cover is refused with the closest passages shown as such, and no
sentence is ever quoted from a passage under the relevance floor. Real ingestion, real retrieval,
real embeddings; the corpus is ingested once for the module.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from knowledge.chat import NO_RESULTS_TEXT
from knowledge.retrieval.answerability import QUOTE_FLOOR
from knowledge.synthesis.refusal import CLOSEST_HEADING
from tests.asking import chat_ask
from tests.conftest import CORPUS
from tests.ingested import ingested_collection

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db

SPENDING = Path(__file__).resolve().parent.parent / "data" / "monthly_spending.csv"
FILES = (
    CORPUS / "pdf" / "pasa.pdf",
    CORPUS / "office" / "dummy.docx",
    CORPUS / "html" / "flag_day.html",
    CORPUS / "openapi" / "petstore-expanded-3.0.json",
    CORPUS / "office" / "dummy.xlsx",
    CORPUS / "text" / "gravity_hill.md",
    SPENDING,
)
QUOTE_LINE = re.compile(r'^- "(.+)" \[Source (\d+)\]$', re.MULTILINE)

# question -> a pattern the first quoted sentence must hold (None: the answer must be a refusal)
ANSWERS = {
    # The walk-through's failures.
    "What does the PaSa paper propose?": r"(?i)PaSa, (?:an|a) [\w ,-]*paper search agent",
    # The abstract's 35k, or the dataset's split sizes (the paper gives 33,511 and 33,551): never the
    # 200 queries of a sample or the 19,812 pairs of the selector's training data.
    "How many queries are in AutoScholarQuery?": r"35k|33,5[15]1",
    "What recall@20 does PaSa-7b reach on RealScholarQuery?": r"0\.5798",
    "How much did I spend in March?": r"(?s)Month: March.*Total: 1742\.65",
    "How many query-paper pairs are in the AutoScholarQuery training split?": r"33,5[15]1",
    "Refund policy for pets?": None,
    # A new user's other questions, one per remaining file.
    "What is hybrid search and why does RAG need it?": r"(?i)hybrid search.*(?:combin|keyword)",
    "When is Flag Day celebrated in Canada?": r"February 15",
    "How do I delete a pet from the store?": r"(?i)delet",
    "What is a gravity hill?": r"(?i)gravity hill.*is a place",
    # A keyword query; the answer is a row quoted whole, with its column headers.
    "ノートパソコン sales in 2024": r"^日付: 2024-\d\d-\d\d; 商品名: ノートパソコン; .*数量: \d+",
}


@pytest.fixture(scope="module")
def walkthrough(django_db_setup, django_db_blocker):
    with (
        django_db_blocker.unblock(),
        ingested_collection(username="newcomer", name="first steps", files=FILES) as made,
    ):
        yield made


def ask(walkthrough, question: str):
    return chat_ask(user=walkthrough.user, question=question, collection_ids=[walkthrough.collection.pk])


def quotes(turn) -> list[tuple[str, int]]:
    return [(text, int(number)) for text, number in QUOTE_LINE.findall(turn.answer)]


# Not met without a reader model (README, evaluation): the three passages retrieved for this question
# hold a sample's 100 pairs and a development subset's 200 queries but no total; the abstract's 35k is
# ranked below them.
NOT_YET = {"How many queries are in AutoScholarQuery?"}


@pytest.mark.parametrize(
    "question",
    [
        pytest.param(q, marks=pytest.mark.xfail(strict=True, reason="retrieval misses the total"))
        if q in NOT_YET
        else q
        for q, expected in ANSWERS.items()
        if expected
    ],
)
def test_the_first_quote_answers_the_question(walkthrough, no_llm, question):
    turn = ask(walkthrough, question)
    quoted = quotes(turn)
    assert turn.mode == "extractive", turn.answer
    assert quoted, turn.answer
    assert re.search(ANSWERS[question], quoted[0][0]), turn.answer


@pytest.mark.xfail(
    strict=True,
    reason="not met without a reader model: 'policy' and 'pets' occur in the documents, only 'refund' "
    "does not, and the evidence (cosine 0.36, 0.64 of a typical answer) is that of answerable questions",
)
def test_a_question_the_documents_do_not_cover_is_refused_with_the_closest_matches(walkthrough, no_llm):
    turn = ask(walkthrough, "Refund policy for pets?")
    assert turn.mode == "no_results", turn.answer
    assert turn.answer.startswith(NO_RESULTS_TEXT)
    assert CLOSEST_HEADING in turn.answer
    assert not quotes(turn), "a closest match is shown as such, never quoted as an answer"
    assert turn.cited_sources == []


@pytest.mark.parametrize("question", list(ANSWERS))
def test_no_sentence_is_quoted_from_a_passage_under_the_floor(walkthrough, no_llm, question):
    turn = ask(walkthrough, question)
    scores = {s["n"]: s.get("scores") or {} for s in turn.retrieved}
    quoted = quotes(turn)
    assert quoted, turn.answer  # a refusal would pass the loop below without checking anything
    for text, number in quoted:
        score = scores.get(number, {})
        # The keyword search's first passage is judged by its words: the English model's cosine
        # to a row of Japanese cells says nothing (the row naming the laptop scores 0.16).
        assert score.get("lexical_rank") == 1 or score.get("similarity", 1.0) >= QUOTE_FLOOR, (text, score)
