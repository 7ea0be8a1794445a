"""knowledge_bench retrieve on a tiny collection: it builds, measures every stage and ends with JSON."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from knowledge.benchmarks import retrieve
from knowledge.benchmarks.lexical import _chunk_rounds
from knowledge.models import Chunk, Collection

pytestmark = pytest.mark.django_db


def _bench(*args) -> tuple[str, dict]:
    out = io.StringIO()
    call_command("knowledge_bench", "retrieve", *args, stdout=out)
    text = out.getvalue()
    return text, json.loads(text.strip().splitlines()[-1])


def test_the_benchmark_builds_measures_and_reuses_its_collection():
    text, figures = _bench(
        "--chunks", "120", "--queries", "2", "--scope-share", "0.5", "0.1", "--warm-up", "5"
    )
    assert figures["chunks"] == 120 and figures["queries"] == 2
    # The process's three warm-up questions, then five chunk openings.
    assert figures["warm_up_questions"] == 3 + 5 and "after 8 others" in text
    for stage in ("embed", "dense", "lexical", "hybrid", "reference"):
        assert figures[f"{stage}_p95_ms"] >= figures[f"{stage}_p50_ms"] > 0
    assert 0 <= figures["hnsw_recall_at_10"] <= 1
    assert set(figures["scopes"]) == {"0.1", "0.5"}
    assert figures["scopes"]["0.1"]["rows"] == 12 and figures["scopes"]["0.5"]["rows"] == 60
    assert all(scope["always_full_k"] for scope in figures["scopes"].values())
    parts = Collection.objects.filter(owner__username=retrieve.USER)
    assert Chunk.objects.filter(collection__in=parts).count() == 120
    assert "Built 120 chunks" in text

    text, figures = _bench(
        "--chunks", "120", "--queries", "1", "--scope-share", "0.5", "0.1", "--warm-up", "0"
    )
    assert figures["warm_up_questions"] == 3
    assert "Reusing the 120-chunk collection" in text
    call_command("knowledge_bench", "retrieve", "--drop", stdout=io.StringIO())
    assert not Collection.objects.filter(owner__username=retrieve.USER).exists()


def test_derived_chunks_stay_close_to_the_real_ones_they_come_from():
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(20, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"Sentence one of {i}. Sentence two of {i}. Sentence three of {i}." for i in range(20)]
    rows = list(retrieve.derived_rows(texts, vectors, 50))
    assert len(rows) == 50
    assert [text for text, _ in rows[:20]] == texts  # the real chunks first, unchanged
    for n, (text, vector) in enumerate(rows[20:], start=20):
        base = n % 20
        assert abs(float(np.linalg.norm(vector)) - 1) < 1e-5
        assert float(vector @ vectors[base]) > 0.8
        assert f"Sentence one of {base}." in text and text != texts[base]


BAD = [
    ["--scope-share", "0.5", "0.5"],
    ["--scope-share", "1.5"],
    ["--chunks", "0"],
    ["--chunks", "10"],
    ["--warm-up", "-1"],
]


@pytest.mark.parametrize("args", BAD)
def test_bad_arguments_are_refused(args):
    with pytest.raises(CommandError):
        call_command("knowledge_bench", "retrieve", *args, stdout=io.StringIO())


def test_without_the_documentation_corpus_the_benchmarks_stop_with_a_reason(settings, tmp_path):
    """The benchmarks' chunks come from the corpus's Django documentation; without it they used to loop."""
    settings.BASE_DIR = tmp_path / "checkout"
    with pytest.raises(CommandError, match="no Django documentation text under"):
        next(_chunk_rounds(10))


def test_the_reference_search_walks_the_default_models_graph():
    """Plain pgvector's search, as the product's index allows it: filtered by the model only, ordered
    by the column cast to the model's dimension (a bare ``embedding <=> q`` would scan the table)."""
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    typed, params = retrieve._model_order_params(vector)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("EXPLAIN " + retrieve._REFERENCE_SQL.format(typed=typed), [*params, 50])
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "chunk_embedding_hnsw_minilm" in plan, plan
