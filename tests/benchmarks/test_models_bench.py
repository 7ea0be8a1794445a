"""knowledge_bench models and vectors on tiny inputs: real models (a bundled one in a child
process, a 768-dimension endpoint on 127.0.0.1 in this one), real PostgreSQL, the table written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from knowledge.clients.embedding_registry import MINILM
from knowledge.ingestion.extract import extract_sections
from knowledge.models import EmbeddingEndpoint
from knowledge.services.model_endpoints import embedding_endpoint_save

pytest_plugins = ["tests.model_server"]

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DOCUMENT = CORPUS / "text" / "gravity_hill.md"


@pytest.fixture
def tiny_set(tmp_path) -> str:
    """Two questions about gravity_hill.md, their gold sections read from the extractor."""
    sections = extract_sections(DOCUMENT.name, DOCUMENT.read_bytes())
    gold = next(s.source_ref for s in sections if "uphill" in s.text.lower())
    questions = tmp_path / "questions.jsonl"
    rows = [
        {"id": "t1", "question": "Why do cars seem to roll uphill?", "kind": "fact"},
        {"id": "t2", "question": "What makes a slope look like it goes the wrong way?", "kind": "fact"},
    ]
    expected = [{"document": DOCUMENT.name, "source_ref": gold}]
    questions.write_text("\n".join(json.dumps({**row, "expected_sources": expected}) for row in rows))
    files = tmp_path / "files.txt"
    files.write_text(f"{DOCUMENT}\n")
    return f"tiny:{questions}:{files}"


def bench(*args) -> tuple[str, dict]:
    out = io.StringIO()
    call_command("knowledge_bench", *args, stdout=out)
    text = out.getvalue()
    return text, json.loads(text.strip().splitlines()[-1])


@pytest.mark.django_db
def test_one_endpoint_model_is_measured_beside_the_naive_pipelines_figures(tiny_set, mpnet_server):
    embedding_endpoint_save(
        EmbeddingEndpoint(name="local/mpnet", base_url=mpnet_server.base_url, model=mpnet_server.model_name)
    )
    _, row = bench("models", "--set", tiny_set, "--models", "local/mpnet", "--one")
    assert row["model"] == "local/mpnet" and row["dimensions"] == 768
    figures = row["sets"]["tiny"]
    assert figures["questions"] == 2
    for pipeline in ("hybrid", "dense"):
        assert 0 <= figures[pipeline]["recall@5"] <= 1 and 0 < figures[pipeline]["mrr"] <= 1
    assert row["windows_per_s"] > 0 and row["query_ms"]["p95"] >= row["query_ms"]["p50"] > 0
    assert row["rss_mb"]["peak"] >= row["rss_mb"]["loaded"] > 0
    # Every question and window went to the endpoint.
    assert sum(len(r.body["input"]) for r in mpnet_server.requests[1:]) >= row["windows"] + 2


@pytest.mark.slow
def test_the_bundled_model_is_measured_in_a_child_process_and_the_table_written(tiny_set, tmp_path):
    docs = tmp_path / "README.md"
    docs.write_text(
        "before\n<!-- knowledge_bench models: table -->\nold\n<!-- knowledge_bench models: end -->\nafter\n"
    )
    text, figures = bench("models", "--set", tiny_set, "--models", MINILM, "--docs", str(docs))
    [row] = figures["models"]
    assert row["model"] == MINILM and row["dimensions"] == 384, row
    written = docs.read_text()
    assert "old" not in written and written.startswith("before\n") and written.endswith("after\n")
    assert f"| {MINILM} | 384 |" in written and "(1.00)" in written  # its own reference


def test_bad_arguments_are_refused(tiny_set, tmp_path):
    with pytest.raises(CommandError, match="NAME:QUESTIONS.jsonl:FILES.txt"):
        bench("models", "--set", "nameonly")
    with pytest.raises(CommandError, match="not a file"):
        bench("models", "--set", f"x:{tmp_path / 'none.jsonl'}:{tmp_path / 'none.txt'}")
    with pytest.raises(CommandError, match="exactly one model"):
        bench("models", "--set", tiny_set, "--one")


@pytest.mark.django_db
def test_the_vector_layouts_are_measured_with_the_plan_each_search_took():
    text, figures = bench("vectors", "--chunks", "3000", "--writes", "20", "--queries", "10")
    for layout in ("shared", "per-model"):
        row = figures[layout]
        assert row["writes_per_s"] > 0 and row["search_ms"]["p95"] >= row["search_ms"]["p50"] > 0
    # At 3,000 rows a scan may beat the graph; at 100,000 the plan is the index's (docs/benchmarks.md).
    assert all(" Scan " in figures[layout]["plan"] for layout in ("shared", "per-model")), figures
    assert figures["shared_search_p50_ratio"] > 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'bench_vectors_%%'")
        assert cursor.fetchone()[0] == 0  # dropped afterwards
