"""POST /api/v1/query/ with a question in Japanese: the row it names is found and quoted."""

from __future__ import annotations

import re

import pytest

from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.retrieval.test_cjk_search import WORKBOOK, products

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sales(alice):
    collection = collection_create(name="sales", owner=alice)
    document_upload(
        collection=collection, upload=DocumentUpload(filename=WORKBOOK.name, data=WORKBOOK.read_bytes())
    )
    return collection


def quotes(answer: str) -> list[str]:
    return re.findall(r'^- "(.*)" \[Source \d+\]$', answer, flags=re.MULTILINE)


def test_a_japanese_question_is_answered_by_quoting_the_row_it_names(alice, bearer, sales, no_llm):
    client = bearer(alice)
    names = products()[:3]
    assert len(names) == 3, names  # the loop below asks about each
    for name in names:
        asked = {"question": f"{name}の単価はいくらですか？", "collections": [sales.pk]}
        response = client.post("/api/v1/query/", asked, format="json")
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["mode"] == "extractive", body["answer"]
        assert body["citations"][0]["document"] == WORKBOOK.name
        assert body["citations"][0]["source_ref"].startswith("sheet=")
        first = quotes(body["answer"])[0]
        # A whole row of the sheet, the one with the product asked about.
        assert name in first and first.startswith("日付:") and "担当者:" in first, body["answer"]


def test_an_english_question_with_no_japanese_words_is_still_refused(alice, bearer, sales, no_llm):
    client = bearer(alice)
    response = client.post(
        "/api/v1/query/",
        {"question": "What is the boiling point of liquid nitrogen?", "collections": [sales.pk]},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["mode"] == "no_results", response.json()["answer"]
