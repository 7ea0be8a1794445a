"""Validate the retrieval development question set in tests/data/dev_questions.jsonl.

A broken set (bad JSON, duplicate ids, a document that is not in the corpus, a
``source_ref`` the extractor no longer produces) fails here instead of
silently scoring zero in an evaluation run. Pure: no database. The source_refs
are checked against the real extractor, so a change to how sections are cut
or named shows up as a failure that names the stale questions.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from knowledge.ingestion.extract import extract_sections

QUESTIONS = Path(__file__).resolve().parent.parent / "data" / "dev_questions.jsonl"

# ``document`` in the set is a basename; basenames are not unique in the shared
# corpus (django-docs has two csrf.txt, signals.txt and middleware.txt), so this maps each one to
# the exact file the set was written against (relative to the corpus root).
DEV_DOCUMENTS = {
    "pasa.pdf": "pdf/pasa.pdf",
    "paper.pdf": "pdf/paper.pdf",
    "influence.pdf": "pdf/influence.pdf",
    "dummy.docx": "office/dummy.docx",
    "dummy.pptx": "office/dummy.pptx",
    "dummy.xlsx": "office/dummy.xlsx",
    "flag_day.html": "html/flag_day.html",
    "apache.html": "html/apache.html",
    "gravity_hill.md": "text/gravity_hill.md",
    "petstore-expanded-3.0.json": "openapi/petstore-expanded-3.0.json",
    "circular-3.0.json": "openapi/circular-3.0.json",
    "signals.txt": "django-docs/topics/signals.txt",
    "transactions.txt": "django-docs/topics/db/transactions.txt",
    "cache.txt": "django-docs/topics/cache.txt",
    "csrf.txt": "django-docs/howto/csrf.txt",
    "middleware.txt": "django-docs/ref/middleware.txt",
}

# Question kind -> file extension that at least one expected source must have.
KIND_EXTENSIONS = {
    "pdf": ".pdf",
    "docx": ".docx",
    "pptx": ".pptx",
    "xlsx": ".xlsx",
    "html": ".html",
    "markdown": ".md",
    "rst": ".txt",
    "openapi": ".json",
    "no_answer": None,
}
FIELDS = {"id", "question", "expected_sources", "answer", "kind"}
MIN_QUESTIONS = 70


def load_questions() -> list[dict]:
    questions = []
    for number, line in enumerate(QUESTIONS.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(json.loads(line))
        except json.JSONDecodeError as exc:
            pytest.fail(f"{QUESTIONS.name} line {number} is not valid JSON: {exc}")
    return questions


@cache
def produced_refs(path: Path) -> frozenset[str]:
    return frozenset(s.source_ref for s in extract_sections(path.name, path.read_bytes()))


def test_every_line_is_a_well_formed_question():
    questions = load_questions()
    problems = []
    for q in questions:
        qid = q.get("id", "?")
        if set(q) != FIELDS:
            problems.append(f"{qid}: fields {sorted(q)} != {sorted(FIELDS)}")
            continue
        if q["kind"] not in KIND_EXTENSIONS:
            problems.append(f"{qid}: unknown kind {q['kind']!r}")
        for key in ("question", "answer"):
            if not isinstance(q[key], str) or not q[key].strip():
                problems.append(f"{qid}: empty {key}")
        sources = q["expected_sources"]
        if not isinstance(sources, list):
            problems.append(f"{qid}: expected_sources is not a list")
            continue
        for source in sources:
            if not isinstance(source, dict) or set(source) != {"document", "source_ref"}:
                problems.append(f"{qid}: malformed source {source!r}")
        pairs = [(s.get("document"), s.get("source_ref")) for s in sources if isinstance(s, dict)]
        if len(pairs) != len(set(pairs)):
            problems.append(f"{qid}: duplicate expected source")
        extension = KIND_EXTENSIONS.get(q["kind"])
        if q["kind"] == "no_answer":
            if sources:
                problems.append(f"{qid}: a no_answer question must have no expected sources")
        elif not sources:
            problems.append(f"{qid}: kind {q['kind']} needs expected sources")
        elif extension and not any(str(d).endswith(extension) for d, _ in pairs):
            problems.append(f"{qid}: kind {q['kind']} but no {extension} source")
    assert not problems, "\n".join(problems)


def test_ids_are_unique_and_numbered_in_order():
    ids = [q["id"] for q in load_questions()]
    assert ids == [f"q{n}" for n in range(1, len(ids) + 1)]


def test_set_size_and_kind_mix():
    counts = Counter(q["kind"] for q in load_questions())
    print("questions per kind:", dict(sorted(counts.items())), "total:", sum(counts.values()))
    assert sum(counts.values()) >= MIN_QUESTIONS
    empty = set(KIND_EXTENSIONS) - set(counts)
    assert not empty, f"kinds without questions: {sorted(empty)}"


def test_documents_exist_in_the_corpus(corpus):
    missing = sorted(
        {
            s["document"]
            for q in load_questions()
            for s in q["expected_sources"]
            if s["document"] not in DEV_DOCUMENTS or not (corpus / DEV_DOCUMENTS[s["document"]]).is_file()
        }
    )
    assert not missing, f"documents not in DEV_DOCUMENTS or missing from {corpus}: {missing}"
    for name, relative in DEV_DOCUMENTS.items():
        assert Path(relative).name == name
        assert (corpus / relative).is_file(), relative


def test_every_source_ref_is_produced_by_the_extractor(corpus):
    stale = []
    for q in load_questions():
        for source in q["expected_sources"]:
            path = corpus / DEV_DOCUMENTS[source["document"]]
            if source["source_ref"] not in produced_refs(path):
                stale.append(f"{q['id']}: {source['document']} has no section {source['source_ref']!r}")
    assert not stale, "\n".join(stale)
