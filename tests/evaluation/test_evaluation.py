"""Evaluation: question parsing with line-numbered errors, strict matching, metrics, knowledge_eval."""

from __future__ import annotations

import io
import json
import math

import pytest
from django.core.management import CommandError, call_command

from knowledge.evaluation import metrics
from knowledge.evaluation.questions import load_questions, normalise
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload

pytest_plugins = ["tests.synthesis.openai_server"]


def test_invalid_lines_are_reported_with_their_number_and_skipped(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"id": "a", "question": "What is x?", '
        '"expected_sources": [{"document": "A.pdf", "source_ref": "page=1"}]}\n'
        "not json\n"
        '{"id": "b", "question": ""}\n'
        "\n"
        '{"id": "c", "question": "Unanswerable?", "expected_sources": []}\n'
        '{"id": "d", "question": "Bad source", "expected_sources": [{"document": "A.pdf"}]}\n'
        '{"id": "a", "question": "Duplicate id", "expected_sources": []}\n'
        '["a list"]\n'
    )
    loaded = load_questions(path)
    assert [q.id for q in loaded.questions] == ["a", "c"]
    assert [number for number, _ in loaded.errors] == [2, 3, 6, 7, 8]
    assert loaded.questions[0].expected == (("a.pdf", "page=1"),)
    assert not loaded.questions[1].answerable


def test_matching_is_strict_except_for_whitespace_and_case():
    assert normalise("  Heading=Getting   Started ") == "heading=getting started"
    expected = [("a.pdf", "page=3")]
    assert metrics.recall_at(expected, {("a.pdf", "page=3")}) == 1.0
    assert metrics.recall_at(expected, {("a.pdf", "page=30"), ("b.pdf", "page=3")}) == 0.0


def test_ranking_metrics_on_a_worked_example():
    expected = [("d", "1"), ("d", "2")]
    ranked = [("d", "9"), ("d", "2"), ("d", "1")]
    assert metrics.reciprocal_rank(expected, ranked) == 0.5
    assert metrics.ndcg_at(expected, ranked, 10) == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    )
    assert metrics.composite(recall=1, mrr=0.5, answer_similarity=0.8, citation_hit_rate=1) == pytest.approx(
        0.3 + 0.1 + 0.24 + 0.2
    )


def test_the_first_quote_is_traced_to_its_cited_source():
    from knowledge.evaluation.answers import first_quote_source

    cited = [
        {"n": 1, "document": "a.pdf", "source_ref": "page=2"},
        {"n": 2, "document": "B.md", "source_ref": "heading=Gravity  hill"},
    ]
    answer = 'Extracted from your documents:\n\n- "It looks uphill." [Source 2]\n- "Cars roll." [Source 1]'
    assert first_quote_source(answer, cited) == ("b.md", "heading=gravity hill")
    assert first_quote_source("No quotes here [Source 1].", cited) is None
    assert first_quote_source('- "Unknown." [Source 9]', cited) is None


@pytest.mark.django_db(transaction=True)
def test_knowledge_eval_on_an_unseen_question_set(alice, corpus, tmp_path, no_llm):
    collection = collection_create(name="hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    questions = tmp_path / "set.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "1",
                "question": "Why does a car appear to roll uphill on a gravity hill?",
                "expected_sources": [{"document": "GRAVITY_HILL.md", "source_ref": "heading=Gravity hill"}],
                "answer": "The layout of the land makes a slight downhill slope look uphill.",
                "kind": "md",
            }
        )
        + "\n{broken\n"
        + json.dumps(
            {
                "id": "2",
                "question": "What was the price of gold in 1850?",
                "expected_sources": [],
                "kind": "none",
            }
        )
        + "\n"
    )
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "knowledge_eval",
        "--collection",
        "hills",
        "--user",
        "alice",
        "--questions",
        str(questions),
        "--json",
        "--answers",
        "--set",
        "minRelevanceScore=0.45",
        "--per-question",
        str(tmp_path / "rows.jsonl"),
        stdout=out,
        stderr=err,
    )
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert "set.jsonl:2: skipped" in err.getvalue()
    for key in (
        "questions",
        "recall@1",
        "recall@3",
        "recall@5",
        "recall@10",
        "mrr",
        "ndcg@10",
        "abstention_accuracy",
        "embedding_coverage",
        "latency_ms",
        "by_kind",
        "citation_hit_rate",
        "answer_similarity",
        "composite",
    ):
        assert key in summary
    assert summary["questions"] == 2 and summary["recall@5"] == 1.0
    assert summary["abstention_accuracy"] == 1.0
    assert summary["citation_hit_rate"] == 1.0 and summary["answer_similarity"] > 0.3
    # Extracted (no LLM): the answer leads with a sentence of the gold section; nothing answerable refused.
    assert summary["first_quote_hit_rate"] == 1.0 and summary["answerable_refused"] == 0.0
    assert set(summary["by_kind"]) == {"md", "none"}
    assert {"p50", "p95"} <= set(summary["latency_ms"]["dense"])
    assert summary["settings"] == {"minRelevanceScore": 0.45}
    # One row per question says what moved the metrics: the gold source's rank, the verdict, the quote.
    rows = {row["id"]: row for row in map(json.loads, (tmp_path / "rows.jsonl").read_text().splitlines())}
    assert rows["1"]["gold_rank"] == 1 and rows["1"]["recall@5"] == 1.0 and not rows["1"]["refused"]
    assert rows["1"]["first_quote_hit"] and rows["1"]["first_quote"] == [
        "gravity_hill.md",
        "heading=gravity hill",
    ]
    assert rows["2"]["refused"] and rows["2"]["gold_rank"] is None and "first_quote" not in rows["2"]
    assert set(rows["1"]["answerability"]["evidence"]) == {
        "best_similarity",
        "margin",
        "coverage",
        "agreement",
        "absent",
        "absent_words",
        "relative_similarity",
        "missing_terms",
        "asked_kind",
        "kind_found",
        "language",
        "english_only",
    }


def test_a_per_question_file_in_a_missing_folder_is_refused_before_the_run(tmp_path):
    missing = tmp_path / "no-such-folder" / "rows.jsonl"
    with pytest.raises(CommandError, match="cannot write: no folder"):
        call_command(
            "knowledge_eval",
            "--collection",
            "any",
            "--questions",
            "tests/data/dev_questions.jsonl",
            "--per-question",
            str(missing),
        )
