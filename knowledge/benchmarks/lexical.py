"""knowledge_bench lexical: BM25 lexical search against PostgreSQL's own rankings and exact BM25.

Loads N chunks of real text (the Django documentation split into paragraphs and
regrouped into ~300-1,200 character chunks, with different groupings on each
pass so repeats are not identical) into a throw-away collection, then runs the
same questions through, interleaved so a busy machine slows all three alike:

    bm25   knowledge.retrieval.lexical.lexical_search
    and    plainto_tsquery + ts_rank_cd   (fast, but AND: long questions miss)
    or     OR tsquery of the same lexemes + ts_rank_cd   (matches, slow, no IDF)

Agreement is measured against an exact BM25 computed in Python over the whole
collection (every chunk, from its tsvector), as overlap@10 and nDCG@10 with the
exact scores as gains. The chunks carry a zero embedding: pgvector's HNSW index
skips zero vectors under cosine, so the load neither pays for nor disturbs the
vector index others are using.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from knowledge.benchmarks.common import (
    CHUNK_COPY_SQL,
    bench_documents_create,
    chunk_copy_row,
    median,
    percentile,
    throwaway_collection,
)
from knowledge.retrieval.lexical import K1, MAX_TERMS, B, lexical_search, query_terms

QUESTIONS = (
    "How do I add a custom template filter to my Django app?",
    "What is the difference between null=True and blank=True on a model field?",
    "How can I run raw SQL queries and map the results to model instances?",
    "How do I configure static files for production with collectstatic?",
    "What does select_related do and when should I use prefetch_related instead?",
    "How do I write a custom management command?",
    "How can I protect a view so that only logged-in users can access it?",
    "How do signals work and how do I connect a receiver to post_save?",
    "What is the recommended way to handle file uploads in a form?",
    "How do I create a database migration after changing a model and how do I apply it?",
    "How do I set up email sending with SMTP settings?",
    "How does CSRF protection work with AJAX requests?",
    "How do I define a many-to-many relationship with extra fields on the intermediate model?",
    "How can I customize the admin change list with list_display and list_filter?",
    "What are class-based generic views like ListView and DetailView?",
    "How do I translate strings in templates and Python code for internationalization?",
    "How do I use the cache framework to cache an entire view?",
    "How do I write tests that use the test client to check a response?",
    "How can I aggregate values, for example the average price of books per publisher?",
    "What is the purpose of the ALLOWED_HOSTS setting and why do I get a Bad Request error?",
    "How do I write a custom authentication backend?",
    "How do I substitute a custom user model for the built-in User?",
    "How do I paginate a queryset in a view?",
    "How does middleware process a request and a response?",
    "How do I use F expressions to update a field based on its current value without a race condition?",
    "How do I deploy Django with Gunicorn behind a web server?",
    "How do I serve media files uploaded by users during development?",
    "How can I make database transactions atomic?",
    "What are database routers and how do I use multiple databases?",
    "How do I create a sitemap for my site?",
    "How do I validate form data and raise a ValidationError for a field?",
    "What is a context processor and how do I add one?",
    "How do I use the messages framework to show a one-time notification after a redirect?",
    "How do I define URL patterns with path converters and reverse them by name?",
    "How do I write an asynchronous view and what are the limitations of async support?",
    "How do I configure logging to send errors to the site admins by email?",
    "How do I use Q objects for complex lookups with OR conditions?",
    "How can I store JSON data in a model field and query keys inside it?",
    "What security settings should I enable before deploying, like SECURE_SSL_REDIRECT and HSTS?",
    "How do I create a formset to edit several objects on one page?",
    "How do I override a template from a third-party app?",
    "How does session storage work and how do I use cookie-based sessions?",
    "How do I add full text search with PostgreSQL using SearchVector and SearchRank?",
    "What is the content types framework and how do generic foreign keys work?",
    "How do I squash migrations when there are too many of them?",
    "I have a Django project with a model that has a ForeignKey to another model, and when I "
    "delete the parent object I want the children to be kept but their reference set to null "
    "instead of being deleted as well; which on_delete option should I use and do I need to "
    "change the field to allow null values in the database?",
    "When I upgrade to a new Django release my project shows deprecation warnings at startup and "
    "some third-party packages break, so what is the recommended process for upgrading a project "
    "step by step, how do I find which deprecated features I use, and how long are features kept "
    "before removal?",
    "We run a multilingual site with timezone-aware datetimes, users in many countries and a "
    "PostgreSQL database; how should USE_TZ be configured, how are aware datetimes stored and "
    "displayed in templates in the user's current time zone, and how do I activate a time zone "
    "per request in middleware?",
    "My test suite is slow because every test creates the database from scratch and loads large "
    "fixtures; how can I keep the test database between runs, run tests in parallel, and use "
    "setUpTestData instead of fixtures to speed things up?",
    "I want to build a REST-like JSON endpoint without any third party library: how do I return a "
    "JsonResponse, read the JSON request body, handle the HTTP method with require_http_methods, "
    "exempt it from CSRF safely, and return proper status codes for validation errors?",
)
LIMIT = 50
TOP = 10
_ZERO_VECTOR = "[" + ",".join(["0"] * settings.KNOWLEDGE_EMBEDDING_DIMENSIONS) + "]"
_SCOPE = "c.collection_id = ANY(%s) AND c.chunk_profile_id = %s"


def run(stdout, *, chunks: int = 100_000, queries: int = 50) -> dict:
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(queries)]
    with throwaway_collection("bench-lexical") as collection:
        try:
            load_seconds = _load(stdout, collection, chunks)
            scope = [[collection.pk], collection.chunk_profile_id]
            stdout.write("Reading every chunk's tsvector for the exact BM25 reference...\n")
            exact = ExactBM25(collection.pk, questions)
            results = _measure(stdout, questions, scope, exact)
        finally:
            _delete_chunks(collection.pk)
    figures = _figures(results, chunks=chunks, queries=queries, load_seconds=load_seconds)
    _print_table(stdout, figures)
    stdout.write(json.dumps(figures) + "\n")
    return figures


# --- corpus ------------------------------------------------------------------


def _corpus_dir() -> Path:
    return Path(settings.BASE_DIR).parent / "shared" / "corpus" / "django-docs"


def _corpus_files() -> list[Path]:
    return sorted(_corpus_dir().rglob("*.txt"))


def _paragraphs(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) >= 40]


def _chunk_rounds(total: int):
    """(round, file index, chunk texts) until ``total`` chunks; each round groups paragraphs anew."""
    files = [_paragraphs(path) for path in _corpus_files()]
    if not any(files):  # nothing to group: the loop below would never reach the total
        raise CommandError(
            f"no Django documentation text under {_corpus_dir()}: the benchmarks build their chunks from it"
        )
    produced, round_ = 0, 0
    while produced < total:
        rng = random.Random(round_)
        for file_index, paragraphs in enumerate(files):
            texts = _group(paragraphs, rng)[: total - produced]
            if texts:
                yield round_, file_index, texts
                produced += len(texts)
            if produced >= total:
                return
        round_ += 1


def _group(paragraphs: list[str], rng: random.Random) -> list[str]:
    texts, buffer, target = [], [], rng.randint(300, 1200)
    for paragraph in paragraphs:
        buffer.append(paragraph)
        if sum(map(len, buffer)) >= target:
            texts.append("\n\n".join(buffer))
            buffer, target = [], rng.randint(300, 1200)
    return texts + (["\n\n".join(buffer)] if buffer else [])


def _load(stdout, collection, total: int) -> float:
    started = time.perf_counter()
    rounds = list(_chunk_rounds(total))
    documents = bench_documents_create(collection, [(r, f) for r, f, _ in rounds])
    with connection.cursor() as cursor, cursor.cursor.copy(CHUNK_COPY_SQL) as copy:
        for round_, file_index, texts in rounds:
            document_id = documents[round_, file_index]
            for index, text in enumerate(texts):
                copy.write_row(
                    chunk_copy_row(
                        document_id=document_id,
                        collection=collection,
                        model="none",
                        index=index,
                        text=text,
                        vector=_ZERO_VECTOR,
                    )
                )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")
        cursor.execute("ANALYZE knowledge_chunk_lexical")
        # Queries would otherwise also scan the indexes' not-yet-merged pending lists.
        cursor.execute("SELECT gin_clean_pending_list('chunk_lexical_search_gin'::regclass)")
    seconds = time.perf_counter() - started
    stdout.write(f"Loaded {total:,} chunks in {seconds:.0f} s\n")
    return seconds


def _delete_chunks(collection_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM knowledge_chunk WHERE collection_id = %s", [collection_id])


# --- exact reference -------------------------------------------------------------


class ExactBM25:
    """BM25 over every chunk of the collection, from the tsvectors alone (no statistics tables)."""

    def __init__(self, collection_id: int, questions: list[str]):
        self.terms = {q: query_terms(q, max_terms=256) for q in set(questions)}
        lexemes = sorted({t for terms in self.terms.values() for t in terms})
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.id, coalesce((SELECT sum(cardinality(u.positions))"
                " FROM unnest(c.search_vector) AS u), 0)"
                " FROM knowledge_chunk AS c WHERE c.collection_id = %s ORDER BY c.id",
                [collection_id],
            )
            rows = cursor.fetchall()
            self.ids = np.array([r[0] for r in rows])
            self.lengths = np.array([r[1] for r in rows], dtype=float)
            self.postings = self._postings(cursor, collection_id, lexemes)

    def _postings(self, cursor, collection_id: int, lexemes: list[str]) -> dict[str, tuple]:
        cursor.execute(
            "SELECT u.lexeme, c.id, cardinality(u.positions) FROM knowledge_chunk AS c,"
            " unnest(c.search_vector) AS u WHERE c.collection_id = %s AND u.lexeme = ANY(%s)",
            [collection_id, lexemes],
        )
        found: dict[str, tuple[list, list]] = {}
        for lexeme, chunk_id, tf in cursor.fetchall():
            ids, tfs = found.setdefault(lexeme, ([], []))
            ids.append(chunk_id)
            tfs.append(tf)
        return {
            lexeme: (np.searchsorted(self.ids, np.array(ids)), np.array(tfs, dtype=float))
            for lexeme, (ids, tfs) in found.items()
        }

    def scores(self, question: str) -> dict[int, float]:
        n, avg = len(self.ids), self.lengths.mean()
        terms = self.terms[question]
        present = [(len(self.postings[t][0]), i, t) for i, t in enumerate(terms) if t in self.postings]
        total = np.zeros(n)
        for df, _, term in sorted(present)[:MAX_TERMS]:
            positions, tf = self.postings[term]
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total[positions] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.lengths[positions] / avg))
        hit = np.nonzero(total)[0]
        return {int(self.ids[i]): float(total[i]) for i in hit}


def top_ids(scores: dict[int, float], k: int) -> list[int]:
    return [i for i, _ in sorted(scores.items(), key=lambda kv: (-round(kv[1], 9), kv[0]))[:k]]


def overlap(got: list[int], ideal: list[int]) -> float:
    return len(set(got[:TOP]) & set(ideal[:TOP])) / max(1, min(TOP, len(ideal)))


def ndcg(got: list[int], ideal: list[int], gains: dict[int, float]) -> float:
    dcg = sum(gains.get(i, 0.0) / math.log2(rank + 2) for rank, i in enumerate(got[:TOP]))
    best = sum(gains[i] / math.log2(rank + 2) for rank, i in enumerate(ideal[:TOP]))
    return dcg / best if best else 1.0


# --- measurement ------------------------------------------------------------------

_AND_SQL = f"""
    SELECT c.chunk_id FROM knowledge_chunk_lexical AS c, plainto_tsquery('english', %s) AS q
    WHERE c.search_vector @@ q AND ({_SCOPE})
    ORDER BY ts_rank_cd(c.search_vector, q) DESC, c.chunk_id LIMIT %s
"""
_OR_SQL = f"""
    SELECT c.chunk_id FROM knowledge_chunk_lexical AS c, CAST(%s AS tsquery) AS q
    WHERE c.search_vector @@ q AND ({_SCOPE})
    ORDER BY ts_rank_cd(c.search_vector, q) DESC, c.chunk_id LIMIT %s
"""


def _bm25(question: str, scope: list) -> list[int]:
    hits = lexical_search(query=question, scope_sql=_SCOPE, scope_params=scope, limit=LIMIT)
    return [h.chunk_id for h in hits]


def _and(question: str, scope: list) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(_AND_SQL, [question, *scope, LIMIT])
        return [r[0] for r in cursor.fetchall()]


def _or(question: str, scope: list) -> list[int]:
    # The lexemes lexical_search starts from, quoted as tsquery operands.
    terms = query_terms(question)
    if not terms:
        return []
    quoted = " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)
    with connection.cursor() as cursor:
        cursor.execute(_OR_SQL, [quoted, *scope, LIMIT])
        return [r[0] for r in cursor.fetchall()]


METHODS = {"bm25": _bm25, "and": _and, "or": _or}


def _measure(stdout, questions: list[str], scope: list, exact: ExactBM25) -> dict[str, dict[str, list]]:
    for question in questions[:3]:  # warm the caches for every method alike
        for method in METHODS.values():
            method(question, scope)
    results = {name: {"ms": [], "overlap": [], "ndcg": [], "short": []} for name in METHODS}
    for n, question in enumerate(questions, 1):
        gains = exact.scores(question)
        ideal = top_ids(gains, TOP)
        for name, method in METHODS.items():
            started = time.perf_counter()
            got = method(question, scope)
            results[name]["ms"].append((time.perf_counter() - started) * 1000)
            results[name]["overlap"].append(overlap(got, ideal))
            results[name]["ndcg"].append(ndcg(got, ideal, gains))
            results[name]["short"].append(len(got) < LIMIT)
        if n % 10 == 0:
            stdout.write(f"  {n}/{len(questions)} questions\n")
    return results


def _figures(results, *, chunks: int, queries: int, load_seconds: float) -> dict:
    figures = {
        "benchmark": "lexical",
        "chunks": chunks,
        "queries": queries,
        "limit": LIMIT,
        "load_seconds": round(load_seconds, 1),
    }
    for name, r in results.items():
        figures[f"{name}_p50_ms"] = round(median(r["ms"]), 2)
        figures[f"{name}_p95_ms"] = round(percentile(r["ms"], 95), 2)
        figures[f"{name}_overlap_at_10"] = round(float(np.mean(r["overlap"])), 4)
        figures[f"{name}_min_overlap_at_10"] = round(float(np.min(r["overlap"])), 2)
        figures[f"{name}_ndcg_at_10"] = round(float(np.mean(r["ndcg"])), 4)
        figures[f"{name}_queries_under_limit"] = int(sum(r["short"]))
    figures["speedup_p50_vs_or"] = round(figures["or_p50_ms"] / figures["bm25_p50_ms"], 1)
    figures["speedup_p95_vs_or"] = round(figures["or_p95_ms"] / figures["bm25_p95_ms"], 1)
    figures["slowdown_p50_vs_and"] = round(figures["bm25_p50_ms"] / figures["and_p50_ms"], 1)
    return figures


_LABELS = {
    "bm25": "BM25 lexical_search",
    "and": "plainto_tsquery + ts_rank_cd",
    "or": "OR tsquery + ts_rank_cd",
}


def _print_table(stdout, f: dict) -> None:
    stdout.write(f"\nLexical search over {f['chunks']:,} chunks, {f['queries']} questions, ")
    stdout.write(f"top {f['limit']}\n")
    stdout.write(f"{'method':30} {'p50 ms':>8} {'p95 ms':>8} {'overlap@10':>11} {'min':>5} ")
    stdout.write(f"{'nDCG@10':>8} {'<limit':>7}\n")
    for name, label in _LABELS.items():
        stdout.write(
            f"{label:30} {f[f'{name}_p50_ms']:8.1f} {f[f'{name}_p95_ms']:8.1f} "
            f"{f[f'{name}_overlap_at_10']:11.3f} {f[f'{name}_min_overlap_at_10']:5.1f} "
            f"{f[f'{name}_ndcg_at_10']:8.4f} {f[f'{name}_queries_under_limit']:7d}\n"
        )
    stdout.write(
        "overlap and nDCG against exact BM25 over all chunks; "
        f"<limit = questions with fewer than {f['limit']} hits\n"
        f"BM25 is {f['speedup_p50_vs_or']}x faster than OR + ts_rank_cd at p50 "
        f"({f['speedup_p95_vs_or']}x at p95), {f['slowdown_p50_vs_and']}x the time of AND + ts_rank_cd\n\n"
    )
