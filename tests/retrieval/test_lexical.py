"""Lexical search on the real database: BM25 ranking, OR semantics, IDF, scope, hostile input.

Chunks are inserted directly (no embedding: this is lexical only) from real
Django documentation; an exact BM25 computed here in Python from the chunks'
own tsvectors -- not from the statistics tables the search reads -- is the
reference.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.db import ProgrammingError, connection

from knowledge.models import Chunk, ChunkProfile, Collection, Document
from knowledge.retrieval import lexical
from knowledge.retrieval.lexical import LexicalHit, lexical_search, query_terms
from knowledge.retrieval.scope import search_scope
from tests.asking import request_for

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DOCS = CORPUS / "django-docs"
IN_SCOPE_FILES = (
    "topics/db/queries.txt",
    "topics/db/models.txt",
    "topics/db/optimization.txt",
    "topics/db/transactions.txt",
    "topics/http/middleware.txt",
    "topics/templates.txt",
    "howto/custom-template-tags.txt",
    "howto/custom-management-commands.txt",
    "topics/signals.txt",
    "topics/cache.txt",
)
OUT_OF_SCOPE_FILES = ("ref/csrf.txt", "topics/email.txt", "topics/pagination.txt")
VECTOR = [1 / math.sqrt(384)] * 384  # any unit vector: nothing here is embedded
QUESTIONS = (
    "How do I add a custom template filter to my Django app?",
    "What does select_related do and when should I use prefetch_related instead?",
    "How do I write a custom management command?",
    "How do signals work and how do I connect a receiver to post_save?",
    "How can I make database transactions atomic?",
    "How do I use F expressions to update a field based on its current value?",
    "How does middleware process a request and a response?",
    "How do I use the cache framework to cache an entire view?",
    "How do I use Q objects for complex lookups with OR conditions?",
    "What is the difference between null=True and blank=True on a model field?",
)
K1, B = 1.2, 0.75


def paragraphs(relative: str) -> list[str]:
    text = (DOCS / relative).read_text(encoding="utf-8")
    return [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) >= 40]


def chunk_texts(files, *, size: int = 700) -> list[str]:
    """Consecutive paragraphs merged up to ~size characters, like the paragraph chunker."""
    texts, buffer = [], []
    for relative in files:
        for paragraph in paragraphs(relative):
            buffer.append(paragraph)
            if sum(map(len, buffer)) >= size:
                texts.append("\n\n".join(buffer))
                buffer = []
    return texts + (["\n\n".join(buffer)] if buffer else [])


@pytest.fixture
def profile():
    return ChunkProfile.objects.create(name="lexical-test", chunk_size=1000, chunk_overlap=100)


def make_collection(name: str, profile: ChunkProfile) -> Collection:
    return Collection.objects.create(name=name, chunk_profile=profile)


def add_chunks(collection: Collection, texts: list[str], *, profile: ChunkProfile | None = None) -> list[int]:
    profile = profile or collection.chunk_profile
    document = Document.objects.create(
        collection=collection,
        filename=f"doc-{Document.objects.count()}.txt",
        content_hash=f"{collection.pk}-{profile.pk}-{Document.objects.count()}",
        size=sum(map(len, texts)),
    )
    rows = [
        Chunk(
            document=document,
            collection=collection,
            chunk_profile=profile,
            embedding_model=settings.KNOWLEDGE_EMBEDDING_MODEL,
            index=i,
            content=text,
            token_count=len(text.split()),
            source_ref="section=test",
            embedding=VECTOR,
        )
        for i, text in enumerate(texts)
    ]
    return [chunk.pk for chunk in Chunk.objects.bulk_create(rows)]


@pytest.fixture
def docs(profile):
    """Collection A (searched) and collection B (never searched) from different files."""
    a, b = make_collection("lexical-a", profile), make_collection("lexical-b", profile)
    add_chunks(a, chunk_texts(IN_SCOPE_FILES))
    add_chunks(b, chunk_texts(OUT_OF_SCOPE_FILES))
    return a, b


def scope_of(*collections) -> tuple[str, list]:
    return "c.collection_id = ANY(%s) AND c.chunk_profile_id = %s", [
        [c.pk for c in collections],
        collections[0].chunk_profile_id,
    ]


def search(query: str, *collections, limit: int = 50) -> list[LexicalHit]:
    sql, params = scope_of(*collections)
    return lexical_search(query=query, scope_sql=sql, scope_params=params, limit=limit)


def exact_bm25(query: str, chunk_ids: list[int]) -> dict[int, float]:
    """BM25 (k1=1.2, b=0.75) over exactly these chunks, from their tsvectors."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, u.lexeme, cardinality(u.positions) FROM knowledge_chunk AS c"
            " LEFT JOIN LATERAL unnest(c.search_vector) AS u ON true WHERE c.id = ANY(%s)",
            [chunk_ids],
        )
        rows = cursor.fetchall()
    lengths = {chunk_id: 0 for chunk_id in chunk_ids}
    tf: dict[str, dict[int, int]] = {}
    for chunk_id, lexeme, count in rows:
        if lexeme is not None:
            lengths[chunk_id] += count
            tf.setdefault(lexeme, {})[chunk_id] = count
    n, avg = len(chunk_ids), sum(lengths.values()) / len(chunk_ids)
    terms = sorted((len(tf[t]), i, t) for i, t in enumerate(query_terms(query, max_terms=256)) if t in tf)
    scores: dict[int, float] = {}
    for df, _, term in terms[: lexical.MAX_TERMS]:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for chunk_id, count in tf[term].items():
            norm = count + K1 * (1 - B + B * lengths[chunk_id] / avg)
            scores[chunk_id] = scores.get(chunk_id, 0.0) + idf * count * (K1 + 1) / norm
    return scores


def top(scores: dict[int, float], k: int) -> list[int]:
    return [i for i, _ in sorted(scores.items(), key=lambda kv: (-round(kv[1], 9), kv[0]))[:k]]


def ids_of(collection) -> list[int]:
    return list(Chunk.objects.filter(collection=collection).values_list("pk", flat=True))


# --- terms -------------------------------------------------------------------


def test_query_terms_are_the_columns_stems_deduplicated_in_order_and_capped():
    assert query_terms("Running the databases; the database RUNS!") == ["run", "databas"]
    long_query = " ".join(f"word{i}" for i in range(300))
    assert query_terms(long_query) == [f"word{i}" for i in range(32)]
    assert len(query_terms(long_query, max_terms=5)) == 5
    assert query_terms("the and of to is it") == []


def test_query_terms_match_the_generated_column(profile):
    collection = make_collection("lexical-stems", profile)
    text = "Caching querysets avoids repeated database hits; cached templates render faster."
    [chunk_id] = add_chunks(collection, [text])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(search_vector) FROM knowledge_chunk WHERE id = %s", [chunk_id]
        )
        column = set(cursor.fetchone()[0])
    assert set(query_terms(text)) == column


# --- ranking -----------------------------------------------------------------


def test_every_returned_score_is_exact_bm25_over_the_scope(docs):
    a, _ = docs
    scope_ids = ids_of(a)
    for question in QUESTIONS:
        reference = exact_bm25(question, scope_ids)
        hits = search(question, a)
        assert len(hits) == 50, question
        assert [h.rank for h in hits] == list(range(1, 51))
        for hit in hits:
            assert hit.score == pytest.approx(reference[hit.chunk_id], rel=1e-9, abs=1e-9), question


def test_top_ten_equals_exact_bm25_over_the_scope(docs):
    """Tolerance: none at the top 10 for these questions; at 50, at most 1 of 50 may differ."""
    a, _ = docs
    scope_ids = ids_of(a)
    for question in QUESTIONS:
        reference = exact_bm25(question, scope_ids)
        got = [h.chunk_id for h in search(question, a)]
        assert got[:10] == top(reference, 10), question
        assert len(set(got) & set(top(reference, 50))) >= 49, question


def test_threshold_candidates_keep_the_exact_top_ten(docs, monkeypatch):
    """Force the IDF-mass candidate query (a large scope's path) on this small scope.

    40 expected candidates in ~400 chunks is as tight, relatively, as the default
    budget; at 10 the tenth hit starts to differ for some questions.
    """
    a, _ = docs
    monkeypatch.setattr(lexical, "OR_BUDGET", 0)
    monkeypatch.setattr(lexical, "MAX_CANDIDATE_SHARE", 1.0)  # in 400 chunks most words are "common"
    monkeypatch.setattr(lexical, "CANDIDATE_BUDGET", 40)
    monkeypatch.setattr(lexical, "CANDIDATES_PER_HIT", 1)
    used = []
    score = lexical._score

    def spy(cursor, query, *rest):
        used.append(query)
        return score(cursor, query, *rest)

    monkeypatch.setattr(lexical, "_score", spy)
    scope_ids = ids_of(a)
    for question in QUESTIONS:
        got = [h.chunk_id for h in search(question, a, limit=10)]
        assert got == top(exact_bm25(question, scope_ids), 10), question
    assert len(used) == len(QUESTIONS)  # no retry was needed to fill the limit
    assert all(" & " in query for query in used)  # stricter than plain OR


def test_threshold_tsquery_matches_exactly_the_chunks_with_enough_idf_mass(profile):
    """Every presence pattern of six terms, checked by PostgreSQL against the threshold."""
    terms = ["alpha", "bravo", "charli", "delta", "echo", "foxtrot"]
    weights = dict(zip(terms, [5.0, 4.0, 2.5, 2.0, 1.0, 0.5], strict=True))
    # Rare enough that every term may lead a match (see the next test for common ones).
    stats = lexical.ScopeStatistics(chunks=100_000, avg_length=50.0, df={t: 500 for t in terms})
    units = lexical._units(list(weights.values()))
    with connection.cursor() as cursor:
        for need in range(1, sum(units) + 1):
            query = lexical._at_least(terms, units, need)
            for pattern in range(1, 2 ** len(terms)):
                present = [t for i, t in enumerate(terms) if pattern >> i & 1]
                cursor.execute("SELECT to_tsvector('simple', %s) @@ %s::tsquery", [" ".join(present), query])
                mass = sum(u for t, u in zip(terms, units, strict=True) if t in present)
                assert cursor.fetchone()[0] == (mass >= need), (need, present)
    assert lexical.threshold_tsquery(weights, stats, budget=10**9) == lexical.tsquery_any(terms)
    strictest = lexical.threshold_tsquery(weights, stats, budget=0)
    assert strictest.count(" & ") == len(terms) - 1 and " | " not in strictest


def test_candidates_hold_one_of_the_rarest_terms_when_common_ones_would_lead(profile, monkeypatch):
    """With the terms' postings over the budget, a candidate must hold one of the rarest terms
    whose postings fit in it (at least one) as well as reach the threshold; with every term's
    postings within it, or a scan cheap anyway, the query is the whole threshold."""
    terms = ["alpha", "bravo", "charli", "delta", "echo"]
    weights = dict(zip(terms, [5.0, 4.0, 3.0, 2.0, 1.0], strict=True))
    df = dict(zip(terms, [1_000, 3_000, 4_000, 9_000, 20_000], strict=True))
    stats = lexical.ScopeStatistics(chunks=100_000, avg_length=50.0, df=df)
    units = lexical._units(list(weights.values()))
    # 3,700 postings under a one-operand-per-term query: cheap enough to scan whoever leads.
    cheap = lexical._led_by_rare_terms(terms, units, 1, [d // 10 for d in df.values()], stats.chunks)
    assert cheap == lexical._at_least(terms, units, 1) == lexical.tsquery_any(terms)
    monkeypatch.setattr(lexical, "LEADING_FREE_WORK", 0)
    leading = {"alpha", "bravo"}  # 4,000 postings; with charli's 8,000 > 5,000 (the minimum budget)
    assert lexical.LEADING_POSTINGS_MIN == 5_000 and lexical.LEADING_POSTINGS_SHARE * 100_000 < 5_000
    with connection.cursor() as cursor:
        for need in range(1, sum(units) + 1):
            query = lexical._led_by_rare_terms(terms, units, need, list(df.values()), stats.chunks)
            for pattern in range(1, 2 ** len(terms)):
                present = [t for i, t in enumerate(terms) if pattern >> i & 1]
                cursor.execute("SELECT to_tsvector('simple', %s) @@ %s::tsquery", [" ".join(present), query])
                mass = sum(u for t, u in zip(terms, units, strict=True) if t in present)
                held = bool(set(present) & leading)
                assert cursor.fetchone()[0] == (mass >= need and held), (need, present)
    everything = lexical._led_by_rare_terms(terms, units, 1, [10] * len(terms), stats.chunks)
    assert everything == lexical._at_least(terms, units, 1) == lexical.tsquery_any(terms)


def test_hits_report_the_scored_lexemes_their_chunk_holds(docs):
    """What the answerability check would otherwise read from each chunk's vector."""
    a, _ = docs
    sql, params = scope_of(a)
    for question in QUESTIONS:
        weights = lexical.term_weights(
            lexical.scope_statistics(query=question, scope_sql=sql, scope_params=params)
        )
        hits = search(question, a, limit=20)
        assert hits
        for hit in hits:
            assert hit.lexemes == lexical.chunk_lexemes(chunk_id=hit.chunk_id, lexemes=list(weights)), (
                question
            )


def test_idf_comes_from_the_scope_not_the_whole_table(docs):
    """B repeats one of the query's words everywhere; A's scores must not notice."""
    a, b = docs
    add_chunks(b, ["A transaction about a cache: transaction, transaction."] * 300)
    question = "How can I make database transactions atomic?"
    reference = exact_bm25(question, ids_of(a))
    hits = search(question, a, limit=10)
    assert [h.chunk_id for h in hits] == top(reference, 10)
    assert [h.score for h in hits] == pytest.approx([reference[h.chunk_id] for h in hits], rel=1e-9)


def test_a_rare_term_outranks_a_common_one(profile):
    collection = make_collection("lexical-idf", profile)
    filler = "Django renders the template with the context for the request."
    texts = [f"{filler} The model stores rows." for _ in range(30)]
    texts.append(f"{filler} The model stores rows, and a model manager returns model rows.")
    texts.append(f"{filler} The paginator splits rows.")  # the only chunk with the rare word
    ids = add_chunks(collection, texts)
    with connection.cursor() as cursor:  # without IDF, the model-heavy chunk comes first
        cursor.execute(
            "SELECT id FROM knowledge_chunk, to_tsquery('english', 'model | paginator') AS q"
            " WHERE collection_id = %s AND search_vector @@ q"
            " ORDER BY ts_rank_cd(search_vector, q) DESC LIMIT 1",
            [collection.pk],
        )
        assert cursor.fetchone()[0] == ids[-2]
    hits = search("model paginator", collection, limit=5)
    assert hits[0].chunk_id == ids[-1]
    assert hits[1].chunk_id == ids[-2]


def test_long_question_whose_words_never_co_occur_still_finds_the_chunk(docs):
    a, _ = docs
    question = (
        "My page loops over hundreds of orders and prints each customer's name, and the debug "
        "toolbar shows one extra database query per order; is there a way to follow the foreign "
        "key with a join so that everything comes back in a single query, and when would I need "
        "to prefetch instead?"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM knowledge_chunk WHERE collection_id = %s"
            " AND search_vector @@ plainto_tsquery('english', %s)",
            [a.pk, question],
        )
        assert cursor.fetchone()[0] == 0  # AND semantics finds nothing
    hits = search(question, a, limit=5)
    right = Chunk.objects.get(collection=a, content__contains="Use ``QuerySet.select_related()`` and")
    assert hits[0].chunk_id == right.pk
    assert [h.chunk_id for h in hits] == top(exact_bm25(question, ids_of(a)), 5)


# --- scope ---------------------------------------------------------------------


def test_scope_is_applied_inside_the_query_and_the_limit_is_filled_from_it(docs, profile):
    a, b = docs
    question = "How do I write a custom management command?"
    best = Chunk.objects.get(pk=search(question, a, limit=1)[0].chunk_id).content
    # B holds 200 stronger copies; another profile of A holds more (a re-index in progress).
    stronger = f"{best}\n\ncustom management command write custom management command"
    out_b = set(add_chunks(b, [stronger] * 200))
    other = ChunkProfile.objects.create(name="lexical-other", chunk_size=500, chunk_overlap=50)
    out_profile = set(add_chunks(a, [stronger] * 100, profile=other))
    assert {h.chunk_id for h in search(question, a, b, limit=20)} <= out_b  # they would win
    hits = search(question, a, limit=40)
    assert len(hits) == 40
    assert not {h.chunk_id for h in hits} & (out_b | out_profile)
    assert {h.chunk_id for h in hits} <= set(ids_of(a))
    assert [h.chunk_id for h in hits] == top(exact_bm25(question, list(set(ids_of(a)) - out_profile)), 40)


def test_scope_may_filter_below_the_collection(docs):
    a, _ = docs
    extra = add_chunks(a, chunk_texts(["topics/db/aggregation.txt"]))
    extra_document = Chunk.objects.get(pk=extra[0]).document_id
    sql = "c.collection_id = %s AND c.chunk_profile_id = %s AND c.document_id = %s"
    hits = lexical_search(
        query="average price of books per publisher",
        scope_sql=sql,
        scope_params=[a.pk, a.chunk_profile_id, extra_document],
        limit=10,
    )
    assert len(hits) == 10 and {h.chunk_id for h in hits} <= set(extra)


def test_a_scope_naming_a_column_the_copy_lacks_fails_loudly(docs):
    """Scopes run on knowledge_chunk_lexical, which copies only the columns a scope names:
    a condition on any other chunk column is an error, never a filter silently skipped."""
    a, _ = docs
    sql = "c.collection_id = %s AND c.chunk_profile_id = %s AND c.page = %s"
    with pytest.raises(ProgrammingError, match="column c.page does not exist"):
        lexical_search(
            query="average price of books", scope_sql=sql, scope_params=[a.pk, a.chunk_profile_id, 1], limit=5
        )


def test_access_scope_hides_private_chunks_and_their_statistics(alice, charlie, profile):
    """Charlie's hits and scores are those of the public collection alone: Alice's
    private chunks are neither returned nor counted in IDF (no side channel)."""
    public = make_collection("lexical-public", profile)
    public.visibility = Collection.Visibility.PUBLIC
    public.save()
    private = Collection.objects.create(name="lexical-private", chunk_profile=profile, owner=alice)
    add_chunks(public, chunk_texts(IN_SCOPE_FILES[:4]))
    secret = add_chunks(private, ["The zanzibar cache signal transaction middleware."] * 50)
    question = "zanzibar cache signal transaction"
    scope = search_scope(user=charlie)
    hits = lexical_search(query=question, scope_sql=scope.sql(), scope_params=scope.params(), limit=20)
    assert len(hits) == 20 and not {h.chunk_id for h in hits} & set(secret)
    reference = exact_bm25(question, ids_of(public))
    assert [h.chunk_id for h in hits] == top(reference, 20)
    assert [h.score for h in hits] == pytest.approx([reference[h.chunk_id] for h in hits], rel=1e-9)
    own = search_scope(user=alice)
    [first] = lexical_search(query=question, scope_sql=own.sql(), scope_params=own.params(), limit=1)
    assert first.chunk_id in secret


def test_empty_scope_returns_nothing(docs):
    a, _ = docs
    sql = "c.collection_id = %s AND c.chunk_profile_id = %s"
    assert lexical_search(query="cache", scope_sql=sql, scope_params=[-1, a.chunk_profile_id]) == []


# --- statistics ------------------------------------------------------------------


def assert_statistics_are_exact():
    """The trigger-maintained tables equal a recount from the chunk table (per collection, chunk
    profile and embedding model: a re-embed's two sets must not count each other's words)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM information_schema.columns"
            " WHERE table_name = 'knowledge_lexical_partition' AND column_name = 'embedding_model'"
        )
        # Before migration 0021 (tests that migrate backwards), per collection and chunk profile.
        key = "collection_id, chunk_profile_id" + (", embedding_model" if cursor.fetchone()[0] else "")
        width = key.count(",") + 1
        groups, with_lexeme = (
            ", ".join(map(str, range(1, width + 1))),
            ", ".join(map(str, range(1, width + 2))),
        )
        cursor.execute(
            f"""
            SELECT {key}, lexeme, chunks
            FROM knowledge_lexical_term WHERE chunks > 0
            EXCEPT
            SELECT {key}, u.lexeme, count(*)
            FROM knowledge_chunk, unnest(search_vector) AS u GROUP BY {with_lexeme}
            """
        )
        assert cursor.fetchall() == []
        cursor.execute(
            f"""
            SELECT {key}, u.lexeme, count(*)
            FROM knowledge_chunk, unnest(search_vector) AS u GROUP BY {with_lexeme}
            EXCEPT
            SELECT {key}, lexeme, chunks FROM knowledge_lexical_term
            """
        )
        assert cursor.fetchall() == []
        cursor.execute(
            f"""
            SELECT {key}, chunks, tokens FROM knowledge_lexical_partition
            EXCEPT
            SELECT {key}, count(*),
                   coalesce(sum((SELECT sum(cardinality(u.positions)) FROM unnest(search_vector) AS u)), 0)
            FROM knowledge_chunk GROUP BY {groups}
            """
        )
        assert cursor.fetchall() == []
        cursor.execute("SELECT count(*) FROM knowledge_lexical_partition")
        partitions = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(DISTINCT ({key})) FROM knowledge_chunk")
        assert partitions == cursor.fetchone()[0]


def assert_lexical_copy_is_exact():
    """knowledge_chunk_lexical holds exactly one row per chunk: the columns a scope names, its
    vector and its length, recounted here from the chunk table."""
    columns = "collection_id, chunk_profile_id, document_id, embedding_model, metadata"
    with connection.cursor() as cursor:
        for left, right in (("copy", "chunks"), ("chunks", "copy")):
            cursor.execute(
                f"""
                WITH copy AS (
                    SELECT chunk_id, {columns}, length, search_vector FROM knowledge_chunk_lexical
                ),
                chunks AS (
                    SELECT id, {columns}, coalesce((SELECT sum(cardinality(u.positions))
                                         FROM unnest(search_vector) AS u), 0)::int, search_vector
                    FROM knowledge_chunk
                )
                SELECT * FROM {left} EXCEPT ALL SELECT * FROM {right}
                """
            )
            assert cursor.fetchall() == [], f"rows in {left} missing from {right}"


def test_statistics_follow_inserts_deletes_updates_like_the_pipeline(docs, profile):
    a, b = docs
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()
    document = Document.objects.filter(collection=a).first()
    # The pipeline's transaction: delete the document's chunks, insert the new set.
    Chunk.objects.filter(document=document).delete()
    add_chunks(a, chunk_texts(IN_SCOPE_FILES[:3]))
    assert_statistics_are_exact()
    first = Chunk.objects.filter(collection=a).order_by("pk").first()
    Chunk.objects.filter(pk=first.pk).update(content="zebra crossing zebra")
    Chunk.objects.filter(collection=a).update(token_count=1)  # no search change: no-op for the stats
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()
    # A column a scope may name changes: the copy follows, or a filter would judge stale values.
    Chunk.objects.filter(pk=first.pk).update(metadata={"type": "operation"})
    assert_lexical_copy_is_exact()
    b.delete()  # cascades to its chunks; its partition disappears
    assert_statistics_are_exact()
    assert_lexical_copy_is_exact()
    question = "How can I make database transactions atomic?"
    reference = exact_bm25(question, ids_of(a))
    assert [h.chunk_id for h in search(question, a, limit=10)] == top(reference, 10)
    assert search("zebra", a, limit=3)[0].chunk_id == first.pk


def test_truncate_clears_the_statistics(docs):
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE refuses pending FK checks
        cursor.execute("TRUNCATE knowledge_chunk CASCADE")
        cursor.execute(
            "SELECT (SELECT count(*) FROM knowledge_lexical_term)"
            " + (SELECT count(*) FROM knowledge_lexical_partition)"
            " + (SELECT count(*) FROM knowledge_chunk_lexical)"
        )
        assert cursor.fetchone()[0] == 0


# --- hostile input -------------------------------------------------------------------

HOSTILE = [
    "",
    "   ",
    "the and of to is it",
    "&|!():*<->",
    "foo:* & !bar <2> baz | (qux",
    "'quoted' \"double\" \\backslash\\ it''s",
    "'); DROP TABLE knowledge_chunk; --",
    "\x00cache\x00",
    "cache \ud800 surrogate",
    "日本語のテキスト Привет мир مرحبا",
    "🙂🚀 emoji only",
    "C:\\path\\to\\file.py /usr/bin/env http://example.com/a?b=c&d=e",
    "x" * 5000,
    "cache " * 20000,
    " ".join(f"middleware{'s' * (i % 3)} request{i}" for i in range(300)),
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_never_raise(docs, query):
    a, _ = docs
    hits = search(query, a)
    assert all(isinstance(h, LexicalHit) for h in hits)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len(query_terms(query)) <= 32


def test_three_hundred_word_question_is_capped_and_still_matches(docs):
    a, _ = docs
    words = (DOCS / "topics/cache.txt").read_text(encoding="utf-8").split()[:300]
    question = " ".join(words)
    hits = search(question, a, limit=10)
    assert len(hits) == 10
    assert [h.chunk_id for h in hits] == top(exact_bm25(question, ids_of(a)), 10)


def test_lexemes_with_quotes_and_backslashes_round_trip(profile):
    collection = make_collection("lexical-quotes", profile)
    text = "O'Reilly's C:\\Temp\\x it''s a\\'b path\\to 'q' \"w\""
    [chunk_id] = add_chunks(collection, [text])
    terms = query_terms(text)
    assert len(terms) >= 5, terms
    for term in terms:
        assert [h.chunk_id for h in search(term, collection)] == [chunk_id], term


def test_non_latin_text_is_searchable(profile):
    collection = make_collection("lexical-cyrillic", profile)
    ids = add_chunks(collection, ["Привет мир, это тест.", "Другой текст без слов."])
    assert [h.chunk_id for h in search("привет", collection)] == [ids[0]]


def test_nonsense_limits_return_nothing(docs):
    a, _ = docs
    assert search("cache", a, limit=0) == []
    assert search("cache", a, limit=-5) == []


def test_an_underfilled_threshold_is_retried_lower_before_plain_or():
    """A rare word with common ones: the first threshold wants both rarest words together;
    the retry accepts the rare word alone, and plain OR (most of the table) comes last."""
    df = {"router": 222, "multipl": 5_573, "databas": 20_127, "use": 62_664}
    stats = lexical.ScopeStatistics(chunks=100_000, avg_length=75.0, df=df)
    weights = lexical.term_weights(stats)
    first, retry, last = lexical._candidate_queries(weights, stats, limit=50)
    assert last == lexical.tsquery_any(list(weights))
    assert "'router' & " in first
    assert retry != last and "'router'" in retry and "'use'" not in retry


def _heap_rows_read(plan: dict) -> int:
    """Rows the plan's scans of the lexical copy fetched (kept plus removed by their filters)."""
    node_rows = 0
    if plan.get("Relation Name") == "knowledge_chunk_lexical":
        node_rows = int(plan.get("Actual Rows", 0)) + int(plan.get("Rows Removed by Filter", 0))
        node_rows += int(plan.get("Rows Removed by Index Recheck", 0))
    return node_rows + sum(_heap_rows_read(child) for child in plan.get("Plans", []))


def test_a_search_of_one_small_collection_reads_its_rows_not_the_tables(profile, alice):
    """Other collections' chunks matching the question's words are not fetched and thrown away: the
    search's cost follows the searched collection, not the table (before: 2,040 rows fetched for 40)."""
    from django.test.utils import CaptureQueriesContext

    from knowledge.retrieval.service import retrieve

    small, large = make_collection("lexical-small", profile), make_collection("lexical-large", profile)
    add_chunks(small, chunk_texts(("topics/cache.txt",))[:40])
    other = chunk_texts(("topics/cache.txt", "topics/db/queries.txt"))
    add_chunks(large, (other * (2000 // len(other) + 1))[:2000])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk_lexical")
    request = request_for(alice, question="How do I cache an entire view?", collection_ids=[small.pk])
    with CaptureQueriesContext(connection) as queries:
        context = retrieve(user=alice, request=request)
    assert context.primary_chunks, "the small collection answers"
    candidates_sql = next(
        q["sql"] for q in queries.captured_queries if "WITH candidates AS MATERIALIZED" in q["sql"]
    )
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + candidates_sql)
        explained = cursor.fetchone()[0]
    plan = (explained if isinstance(explained, list) else __import__("json").loads(explained))[0]["Plan"]
    assert _heap_rows_read(plan) <= 40
