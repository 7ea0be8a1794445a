"""A collection with real documents and the development questions about them, for the gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowledge.evaluation.store import eval_set_replace
from knowledge.models import ChunkProfile
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload

CORPUS = Path("/work/shared/corpus")
DOCUMENTS = {
    "transactions.txt": CORPUS / "django-docs/topics/db/transactions.txt",
    "petstore-expanded-3.0.json": CORPUS / "openapi/petstore-expanded-3.0.json",
    "gravity_hill.md": CORPUS / "text/gravity_hill.md",
}
QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "dev_questions.jsonl"


def gate_questions_for(names) -> list[dict]:
    """The development questions about ``names``, and the first few that nothing answers."""
    rows, unanswerable = [], []
    for line in QUESTIONS.read_text().splitlines():
        data = json.loads(line)
        documents = {s["document"] for s in data["expected_sources"]}
        if documents and documents <= set(names):
            rows.append(data)
        elif not documents and len(unanswerable) < 4:
            unanswerable.append(data)
    return [
        {
            "external_id": d["id"],
            "question": d["question"],
            "expected_sources": d["expected_sources"],
            "answer": d.get("answer", ""),
            "kind": d.get("kind", ""),
        }
        for d in rows + unanswerable
    ]


@pytest.fixture
def handbook(alice):
    """Alice's collection of three real documents, ready, with a question set linked to its gate."""
    collection = collection_create(name="handbook", owner=alice)
    for name, path in DOCUMENTS.items():
        upload = DocumentUpload(filename=name, data=path.read_bytes())
        document_upload(collection=collection, upload=upload, uploaded_by=alice)
    eval_set = eval_set_replace(name="handbook questions", questions=gate_questions_for(DOCUMENTS))
    eval_set.collections.add(collection)
    collection.refresh_from_db()
    return collection


@pytest.fixture
def default_again(db) -> ChunkProfile:
    """The default profile's settings under another name: a release that should measure the same."""
    default = ChunkProfile.objects.get(is_active=True)
    return ChunkProfile.objects.create(
        name="default again",
        strategy=default.strategy,
        chunk_size=default.chunk_size,
        chunk_overlap=default.chunk_overlap,
    )


@pytest.fixture
def hundred_characters(db) -> ChunkProfile:
    """Fixed 100-character chunks without overlap: sentences cut in pieces, a deliberately bad release."""
    return ChunkProfile.objects.create(name="fixed 100", strategy="fixed", chunk_size=100, chunk_overlap=0)
