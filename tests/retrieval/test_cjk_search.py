"""Text without spaces (Japanese here) is found by its own words: CJK bigrams in the full-text vector.

Real documents (the Japanese sales workbook and document of the shared corpus), the real
ingestion pipeline and embeddings, the real retrieve() and PostgreSQL. What each question must
find is read from the documents themselves, never written down here.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import openpyxl
import pytest
from django.db import connection

from knowledge.ingestion.extract import extract_sections
from knowledge.models import Chunk, ChunkProfile, Document
from knowledge.retrieval.lexical import query_terms
from knowledge.retrieval.service import retrieve
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.text.words import CJK_RUN, cjk_bigrams
from tests.asking import request_for
from tests.retrieval.test_lexical import (
    IN_SCOPE_FILES,
    add_chunks,
    assert_lexical_copy_is_exact,
    assert_statistics_are_exact,
    chunk_texts,
    make_collection,
    search,
)

pytestmark = pytest.mark.django_db(transaction=True)

OFFICE = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "office"
WORKBOOK = OFFICE / "dummy.xlsx"
JAPANESE_DOCX = OFFICE / "dummy_jap.docx"


def ingest(collection, path: Path) -> Document:
    result = document_upload(
        collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    )
    document = Document.objects.get(pk=result.document.pk)
    assert document.status == Document.Status.READY, document.error
    return document


def products() -> list[str]:
    """The workbook's product names (the 商品名 column) written in Japanese."""
    names = set()
    for sheet in openpyxl.load_workbook(WORKBOOK, read_only=True):
        rows = sheet.iter_rows(values_only=True)
        column = next(rows).index("商品名")
        names |= {row[column] for row in rows if row[column] and CJK_RUN.search(row[column])}
    return sorted(names)


def sections() -> dict[str, str]:
    """The Japanese document's sections: heading reference -> text."""
    return {s.source_ref: s.text for s in extract_sections(JAPANESE_DOCX.name, JAPANESE_DOCX.read_bytes())}


def phrase_of(text: str, others: list[str], length: int = 6) -> str:
    """A run of ``length`` kana and kanji from ``text`` that no other section holds."""
    for run in sorted(CJK_RUN.findall(text), key=len, reverse=True):
        for start in range(len(run) - length + 1):
            phrase = run[start : start + length]
            if not any(phrase in other for other in others):
                return phrase
    raise AssertionError("no phrase of its own")


def vector_of(text: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT knowledge_search_vector(%s)::text, to_tsvector('english', %s)::text", [text, text]
        )
        return cursor.fetchone()


def lexemes_of(text: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(knowledge_search_vector(%s))", [text])
        return set(cursor.fetchone()[0])


# --- the vector -------------------------------------------------------------------------------


def test_english_text_keeps_exactly_its_english_vector_and_query_terms():
    for text in chunk_texts(IN_SCOPE_FILES[:3]):
        ours, english = vector_of(text)
        assert ours == english
    question = "How do I add a custom template filter to my Django app?"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme FROM unnest(to_tsvector('english', %s)) AS u ORDER BY u.positions[1], u.lexeme",
            [question],
        )
        assert query_terms(question) == [row[0] for row in cursor.fetchall()]


def test_japanese_text_is_indexed_by_the_bigrams_of_its_runs_and_its_latin_words():
    texts = sections()
    assert len(texts) > 1 and all(CJK_RUN.search(text) for text in texts.values()), texts
    for text in texts.values():
        lexemes = lexemes_of(text)
        japanese = {lexeme for lexeme in lexemes if CJK_RUN.search(lexeme)}
        assert japanese == set(cjk_bigrams(text))
        # Latin words glued to Japanese ("LangChainは") keep their English lexeme.
        latin = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", text)}
        assert {lexeme for lexeme in lexemes if lexeme.isascii()} >= {query_terms(w)[0] for w in latin}


def test_the_migration_and_the_python_helpers_read_the_same_runs():
    migration = importlib.import_module("knowledge.migrations.0019_cjk_search_vector")
    assert migration.CJK_RUN == CJK_RUN.pattern


# --- retrieval --------------------------------------------------------------------------------


def test_a_sheet_row_is_found_by_its_cells_text_and_by_part_of_it(alice):
    sales = collection_create(name="sales", owner=alice)
    ingest(sales, WORKBOOK)
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()
    names = products()
    assert len(names) >= 5
    for name in names:
        context = retrieve(user=alice, request=request_for(alice, question=name, collection_ids=[sales.pk]))
        assert context.answerable, (name, context.answerability.as_dict())
        assert context.answerability.evidence.coverage == 1.0
        assert name in context.primary_chunks[0].chunk.content, name
    # Part of a cell: the last four characters of the longest product name.
    longest = max(names, key=len)
    part = longest[-4:]
    assert part != longest and not any(part in other for other in names if other != longest)
    context = retrieve(
        user=alice, request=request_for(alice, question=f"{part}の単価は？", collection_ids=[sales.pk])
    )
    assert context.answerable, context.answerability.as_dict()
    assert longest in context.primary_chunks[0].chunk.content


def test_a_paragraph_of_a_japanese_document_is_found_by_a_phrase_from_it(alice):
    docs = collection_create(name="docs", owner=alice)
    ingest(docs, JAPANESE_DOCX)
    texts = sections()
    assert len(texts) > 1, texts  # a phrase of each section's own, among several
    for source_ref, text in texts.items():
        phrase = phrase_of(text, [t for ref, t in texts.items() if ref != source_ref])
        context = retrieve(
            user=alice,
            request=request_for(alice, question=f"{phrase}について教えて", collection_ids=[docs.pk]),
        )
        assert context.answerable, (phrase, context.answerability.as_dict())
        assert context.primary_chunks[0].chunk.source_ref == source_ref, phrase


def test_an_english_question_ranks_as_before_beside_japanese_chunks(alice, corpus):
    """The Japanese document adds lexemes of its own only: an English question's lexical hits
    and scores over the English document are those it had alone."""
    mixed = collection_create(name="mixed", owner=alice)
    english = ingest(mixed, corpus / "office" / "dummy.docx")
    question = "hybrid search BM25 Tantivy why"
    alone = retrieve(user=alice, request=request_for(alice, question=question, collection_ids=[mixed.pk]))
    ingest(mixed, JAPANESE_DOCX)
    beside = retrieve(user=alice, request=request_for(alice, question=question, collection_ids=[mixed.pk]))
    assert alone.primary_chunks[0].chunk.document_id == english.pk
    assert beside.primary_chunks[0].chunk.pk == alone.primary_chunks[0].chunk.pk
    assert beside.answerable == alone.answerable


def test_statistics_count_the_bigrams_through_updates_and_deletes(alice):
    docs = collection_create(name="docs", owner=alice)
    document = ingest(docs, JAPANESE_DOCX)
    chunk = Chunk.objects.filter(document=document).first()
    chunk.content = chunk.content + " 追加の文章である。"
    chunk.save()
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()
    Chunk.objects.filter(pk=chunk.pk).delete()
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()


@pytest.mark.parametrize(
    ("texts", "question"),
    [
        (["混合检索结合了关键词检索和向量检索。", "数据库事务保证一致性。"], "关键词"),
        (["하이브리드 검색은 정확도를 높인다.", "데이터베이스 트랜잭션은 일관성을 보장한다."], "검색"),
        (["การค้นหาแบบไฮบริดช่วยให้แม่นยำขึ้น", "ธุรกรรมฐานข้อมูลรับประกันความสอดคล้อง"], "ค้นหา"),
        # Half-width katakana is the same word as full-width (NFKC).
        (["ﾉｰﾄﾊﾟｿｺﾝの在庫は十台。", "プリンターの在庫は三台。"], "ノートパソコン"),
    ],
)
def test_chinese_korean_thai_and_half_width_text_is_found_by_part_of_a_word(texts, question):
    profile = ChunkProfile.objects.create(name="cjk-scripts", chunk_size=1000, chunk_overlap=100)
    collection = make_collection("cjk-scripts", profile)
    ids = add_chunks(collection, texts)
    assert [hit.chunk_id for hit in search(question, collection)] == [ids[0]]
    assert_statistics_are_exact()
