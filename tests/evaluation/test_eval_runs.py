"""Stored evaluation sets and runs: imports, knowledge_eval --store, chart, admin comparison."""

from __future__ import annotations

import base64
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command

import knowledge.admin.evaluation  # noqa: F401  (the admin registered by the package)
from knowledge.access import question_scope_checked
from knowledge.evaluation.questions import load_questions
from knowledge.evaluation.runner import run_retrieval
from knowledge.evaluation.store import (
    RunScope,
    eval_run_record,
    eval_runs_chart_svg,
    eval_set_import,
    eval_set_import_beir,
    eval_set_questions,
)
from knowledge.ingestion.extract import extract_sections
from knowledge.models import Chunk, ChunkProfile, EvalRun, EvalSet
from knowledge.services.collections import collection_create, collection_reindex
from knowledge.services.documents import DocumentUpload, document_upload
from tests.releases.helpers import held_promoted

pytest_plugins = ["tests.synthesis.openai_server"]

GRAVITY_Q = {
    "id": "g1",
    "question": "Why does a car appear to roll uphill on a gravity hill?",
    "expected_sources": [{"document": "gravity_hill.md", "source_ref": "heading=Gravity hill"}],
    "kind": "md",
}
NO_ANSWER_Q = {
    "id": "n1",
    "question": "What was the price of gold in 1850?",
    "expected_sources": [],
    "kind": "none",
}


def _jsonl(path, *lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


@pytest.fixture
def hills(alice, corpus):
    collection = collection_create(name="hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    return collection


@pytest.mark.django_db
def test_jsonl_import_reports_bad_lines_by_number_and_replaces_the_set(tmp_path):
    path = _jsonl(tmp_path / "q.jsonl", GRAVITY_Q, "{not json", NO_ANSWER_Q, {"id": "x", "question": ""})
    eval_set, errors = eval_set_import(name="hills-set", path=path)
    assert [number for number, _ in errors] == [2, 4]
    stored = list(eval_set.questions.order_by("pk").values_list("external_id", "expected_sources", "kind"))
    assert stored == [("g1", GRAVITY_Q["expected_sources"], "md"), ("n1", [], "none")]

    _jsonl(path, NO_ANSWER_Q)
    again, errors = eval_set_import(name="hills-set", path=path)
    assert again.pk == eval_set.pk and errors == []
    assert list(again.questions.values_list("external_id", flat=True)) == ["n1"]
    # The stored set round-trips to what the runner gets from the file.
    assert eval_set_questions(eval_set=again) == load_questions(path).questions

    _jsonl(path, GRAVITY_Q, "[1]", NO_ANSWER_Q)
    out, err = io.StringIO(), io.StringIO()
    call_command("knowledge_eval_import", "--name", "hills-set", "--jsonl", str(path), stdout=out, stderr=err)
    assert "'hills-set': 2 question(s), 1 skipped line(s)" in out.getvalue()
    assert "q.jsonl:2: skipped" in err.getvalue()


@pytest.mark.django_db
def test_beir_import_maps_relevant_docs_to_expected_sources(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    _jsonl(
        folder / "corpus.jsonl",
        {"_id": "d1", "title": "Gravity  hills", "text": "A slope that looks uphill is downhill."},
        {"_id": "d2", "title": "", "text": "Magnets do not pull cars uphill."},
        {"_id": "d3", "title": "Horizons", "text": "A hidden horizon misleads the eye."},
    )
    _jsonl(
        folder / "queries.jsonl",
        {"_id": "q1", "text": "Why do cars roll uphill?"},
        {"_id": "q2", "text": "What hides the horizon?"},
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq2\td3\t1\nq2\td1\t0\nbroken\n"
    )
    out_dir = tmp_path / "docs"
    eval_set, errors = eval_set_import_beir(name="beir", folder=folder, corpus_out=out_dir)
    assert [number for number, _ in errors] == [6]
    stored = {q.external_id: q.expected_sources for q in eval_set.questions.all()}
    assert stored == {
        "q1": [
            {"document": "d1.txt", "source_ref": "section=Gravity hills"},
            {"document": "d2.txt", "source_ref": "section=d2"},
        ],
        "q2": [{"document": "d3.txt", "source_ref": "section=Horizons"}],
    }
    # The written files give exactly those references when ingested as TXT.
    assert sorted(p.name for p in out_dir.iterdir()) == ["d1.txt", "d2.txt", "d3.txt"]
    for name, ref in [
        ("d1.txt", "section=Gravity hills"),
        ("d2.txt", "section=d2"),
        ("d3.txt", "section=Horizons"),
    ]:
        refs = {s.source_ref for s in extract_sections(name, (out_dir / name).read_bytes())}
        assert refs == {ref}


@pytest.mark.django_db(transaction=True)
def test_knowledge_eval_store_records_a_run_with_its_metrics(hills, tmp_path, no_llm):
    path = _jsonl(tmp_path / "set.jsonl", GRAVITY_Q, "{broken", NO_ANSWER_Q)
    out = io.StringIO()
    call_command(
        "knowledge_eval",
        "--collection", "hills", "--user", "alice", "--questions", str(path),
        "--set", "minRelevanceScore=0.3", "--json", "--store", "hills-set",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    summary = json.loads(out.getvalue().splitlines()[-1])
    run = EvalRun.objects.select_related("eval_set").get()
    assert f"stored run #{run.pk}" in out.getvalue() and summary["run_id"] == run.pk
    assert run.eval_set.name == "hills-set" and run.eval_set.questions.count() == 2
    assert run.collection == hills and run.chunk_profile == hills.chunk_profile
    assert run.created_by.username == "alice" and run.k == 10 and not run.with_answers
    assert run.settings == {"minRelevanceScore": 0.3}
    assert run.metrics["recall@5"] == summary["recall@5"] == 1.0
    assert set(run.metrics["by_kind"]) == {"md", "none"} and "latency_ms" in run.metrics


def _runs():
    eval_set = EvalSet.objects.create(name="s")
    first = eval_run_record(eval_set=eval_set, k=5, metrics={"recall@5": 0.25, "mrr": 0.125, "ndcg@10": 0.5})
    second = eval_run_record(
        eval_set=eval_set,
        k=5,
        scope=RunScope(settings={"hybrid": False}),
        metrics={"recall@5": 0.75, "mrr": 0.625, "ndcg@10": 0.875, "composite": 0.5,
                 "by_kind": {"md": {"recall@5": 0.375}}},
    )  # fmt: skip
    return first, second


@pytest.mark.django_db
def test_chart_is_valid_svg_labelled_with_each_run():
    first, second = _runs()
    svg = eval_runs_chart_svg([first, second])
    root = ET.fromstring(svg.encode())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert first.label in texts and second.label in texts
    assert second.label == f"#{second.pk} -/- hybrid=False"
    assert "composite" in texts and "nDCG@10".lower() in {t.lower() for t in texts}


@pytest.mark.django_db
def test_admin_compare_action_shows_both_runs_side_by_side(admin_client):
    first, second = _runs()
    response = admin_client.post(
        "/admin/knowledge/evalrun/",
        {"action": "compare_runs", "_selected_action": [first.pk, second.pk]},
    )
    assert response.status_code == 200
    assert [r.pk for r in response.context["runs"]] == [first.pk, second.pk]
    page = response.content.decode()
    for number in ("0.250", "0.125", "0.750", "0.625", "0.875", "0.375"):
        assert f"<td>{number}</td>" in page
    assert "by_kind / md / recall@5" in page
    # The chart is an image (its inline styles would break the page's Content-Security-Policy).
    chart = re.search(r'<img src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert chart and base64.b64decode(chart.group(1)).startswith(b"<?xml")
    assert "Compare two chunk profiles of one collection" in page


@pytest.mark.django_db(transaction=True)
def test_comparing_two_chunk_profiles_records_a_run_per_profile(hills, alice, admin_client, tmp_path, no_llm):
    original = hills.chunk_profile
    small = ChunkProfile.objects.create(name="small", strategy="sentence", chunk_size=200, chunk_overlap=20)
    collection_reindex(collection=hills, chunk_profile=small)
    held_promoted(hills)
    assert hills.chunk_profile == small  # the active profile is now the small one
    counts = {p: Chunk.objects.filter(collection=hills, chunk_profile=p).count() for p in (original, small)}
    assert counts[original] and counts[small] and counts[original] != counts[small]

    eval_set, _ = eval_set_import(name="hills-set", path=_jsonl(tmp_path / "s.jsonl", GRAVITY_Q))
    # The override searches the named profile's chunks, not the active profile's.
    questions = eval_set_questions(eval_set=eval_set)
    for profile in (original, small):
        asked = question_scope_checked(user=alice, collection_ids=[hills.pk]).on_chunk_set(
            chunk_profile_id=profile.pk
        )
        [result] = run_retrieval(questions, user=alice, asked=asked)
        assert result.context.primary_chunks
        assert {r.chunk.chunk_profile_id for r in result.context.primary_chunks} == {profile.pk}

    response = admin_client.post(
        "/admin/knowledge/evalrun/compare/",
        {"eval_set": eval_set.pk, "collection": hills.pk, "chunk_profile_a": original.pk,
         "chunk_profile_b": small.pk, "k": 5},
    )  # fmt: skip
    assert response.status_code == 200
    runs = list(EvalRun.objects.order_by("pk"))
    assert [r.chunk_profile_id for r in runs] == [original.pk, small.pk]
    assert [r.metrics["chunks_searched"] for r in runs] == [counts[original], counts[small]]
    assert all(r.collection == hills and r.k == 5 and "recall@5" in r.metrics for r in runs)
    assert [r.pk for r in response.context["runs"]] == [r.pk for r in runs]
    page = response.content.decode()
    assert runs[0].label in page and runs[1].label in page


@pytest.mark.django_db(transaction=True)  # the upload is processed when its transaction commits
def test_an_evaluation_run_is_started_from_the_admin_and_recorded(
    hills, admin_client, admin_user, tmp_path, no_llm
):
    eval_set, _ = eval_set_import(name="hills-set", path=_jsonl(tmp_path / "s.jsonl", GRAVITY_Q, NO_ANSWER_Q))
    listing = admin_client.get("/admin/knowledge/evalrun/").content.decode()
    assert "/admin/knowledge/evalrun/start/" in listing and "Run an evaluation" in listing
    form = admin_client.get("/admin/knowledge/evalrun/start/")
    assert form.status_code == 200 and b"Start the run" in form.content

    # A bad value is refused with a message and queues nothing.
    refused = admin_client.post(
        "/admin/knowledge/evalrun/start/", {"eval_set": eval_set.pk, "collection": hills.pk, "k": 0}
    )
    assert refused.status_code == 200 and b"greater than or equal to 1" in refused.content
    assert not EvalRun.objects.exists()

    # The test settings run tasks inline: the worker's task records the run before the redirect.
    response = admin_client.post(
        "/admin/knowledge/evalrun/start/",
        {"eval_set": eval_set.pk, "collection": hills.pk, "k": 5},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == "/admin/knowledge/evalrun/"
    assert "Evaluation of hills-set on hills started" in response.content.decode()
    [run] = EvalRun.objects.all()
    assert (run.eval_set, run.collection, run.k, run.created_by) == (eval_set, hills, 5, admin_user)
    assert run.metrics["recall@5"] == 1.0 and run.metrics["questions"] == 2, run.metrics


@pytest.mark.django_db
def test_starting_an_evaluation_needs_an_operator(client, alice):
    client.force_login(alice)
    response = client.get("/admin/knowledge/evalrun/start/")
    assert response.status_code == 302 and "/admin/login/" in response.url
