"""knowledge_bench retrieve: retrieval latency and HNSW recall at N chunks, through the product's code.

The collection (built once, reused by later runs with the same N): a few thousand
real chunks of the Django documentation (knowledge_bench lexical's grouping of
paragraphs) are embedded once with the configured backend; the rest are derived
from them by small perturbations, text and vector alike: a derived chunk drops
one sentence of a real chunk and takes the first sentence of the next one, and
its vector is the real chunk's moved a random part of the way towards the next
chunk's plus a little noise (cosine ~0.95 to the real one). So text statistics
and the vector distribution stay those of real chunks. Rows go in with COPY into
the product's chunk table (the lexical statistics triggers run as for any
insert); a large load drops the HNSW and GIN indexes first and builds them
again afterwards, which is much faster than inserting into them row by row.

The chunks are split into collections so that scopes keeping each
``--scope-share`` of the table exist: with shares 0.5 and 0.01 the collections
hold 1%, 49% and 50% of the rows, and the scopes are the first one (1%) and the
first two (50%), compiled by the product's access code like any search.

Measured in one run, question by question and interleaved so a busy machine
slows all alike (milliseconds, p50 and p95):

    embed      the question's vector, the query cache cleared first (the query backend)
    embed_torch  the same through sentence-transformers on torch (the reference encoder)
    dense      knowledge.retrieval.dense.dense_search over the whole set (plan by cost)
    lexical    knowledge.retrieval.lexical.lexical_search over the whole set
    hybrid     knowledge.retrieval.service.retrieve (embedding included, no LLM reranking), measured
               first for each question: nothing has read its pages into PostgreSQL's cache yet
    hybrid_sequential  the same with the embedding before the lexical search, not alongside it
               (measured second, so with the question's pages cached: a lower bound)
    reference  plain pgvector: SELECT id ... ORDER BY embedding <=> q LIMIT 50, filtered by the model
               alone (its HNSW index is partial, on the column cast to the model's dimension)

plus HNSW recall@10 against an exact scan of the same scope, and per scope share
the dense p95, the smallest result count (always the full limit?), the plan
chosen and both plans' medians, so the choice can be checked against the
faster one.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction
from tqdm import tqdm

from knowledge.access import question_scope_checked
from knowledge.benchmarks.common import (
    CHUNK_COPY_SQL,
    bench_documents_create,
    chunk_copy_row,
    median,
    percentile,
)
from knowledge.benchmarks.lexical import QUESTIONS, _chunk_rounds
from knowledge.clients.embedding import (
    configured_backend,
    embed_query,
    embed_texts,
    get_model,
    query_backend,
    query_cache_clear,
)
from knowledge.models import Collection
from knowledge.retrieval import dense, lexical, service
from knowledge.retrieval.scope import search_scope
from knowledge.retrieval.service import RetrievalRequest, retrieve
from knowledge.services.collections import collection_create

BASE_CHUNKS = 3000
LIMIT = 50  # the product's candidate count per search (service.MIN_CANDIDATES)
TOP = 10
NOISE = 0.2  # norm of the noise added to a derived vector (unit vectors: cosine ~0.95 to the base)
COPY_BATCH = 20_000
# A load adding more rows than this rebuilds the vector and full-text indexes instead of inserting.
REBUILD_INDEXES_ABOVE = 20_000
PREFIX = "bench-retrieve"
USER = "bench-retrieve"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# The chunk table's vector index and the full-text index of the lexical search's copy (migration 0016).
_INDEXES = ("chunk_embedding_hnsw", "chunk_lexical_search_gin")
_GIN_INDEXES = ("chunk_lexical_search_gin",)


def run(
    stdout,
    *,
    chunks: int,
    scope_shares: list[float],
    queries: int = 50,
    recall_queries: int | None = None,
    warm_up: int = 200,
) -> dict:
    user = _bench_user()
    parts, build_seconds = _ensure_collections(stdout, user, chunks, sorted(scope_shares))
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(queries)]
    recall_queries = recall_queries if recall_queries is not None else (queries if chunks <= 200_000 else 20)
    full_ids = [c.pk for c in parts]
    full = search_scope(user=user, collection_ids=full_ids)
    scopes = {
        share: search_scope(user=user, collection_ids=full_ids[: i + 1])
        for i, share in enumerate(sorted(scope_shares))
    }
    if warm_up:
        _read_once(stdout)
    warm_up_questions = _warm_up_questions(full_ids, warm_up)
    stdout.write(
        f"Measuring {queries} questions after {len(warm_up_questions)} others"
        f" (load average {' '.join(load_average())})...\n"
    )
    timings = _measure_main(user, full_ids, full, questions, warm_up_questions)
    recall = _recall(full, questions[:recall_queries])
    scoped = {share: _measure_scope(scope, questions) for share, scope in scopes.items()}
    figures = _figures(chunks, build_seconds, timings, recall, scoped)
    figures["warm_up_questions"] = len(warm_up_questions)
    _print_table(stdout, figures)
    stdout.write(json.dumps(figures) + "\n")
    return figures


# --- the collection ---------------------------------------------------------------


def _bench_user():
    user, _ = get_user_model().objects.get_or_create(username=USER, defaults={"is_active": True})
    return user


def _part_sizes(total: int, shares: list[float]) -> list[int]:
    """Sizes of the collections: the first i of them hold shares[i-1] of ``total``, the last the rest."""
    bounds = [round(total * share) for share in shares] + [total]
    sizes = [bounds[0]] + [b - a for a, b in zip(bounds, bounds[1:], strict=False)]
    if any(size <= 0 for size in sizes):
        raise ValueError("every scope share must be > 0, < 1, distinct, and leave at least one chunk")
    return sizes


def _part_name(total: int, shares: list[float], index: int) -> str:
    key = ",".join(f"{s:g}" for s in shares)
    return f"{PREFIX}-{total}-[{key}]-{index}"


def _ensure_collections(stdout, user, total: int, shares: list[float]) -> tuple[list[Collection], float]:
    """The collections of a previous run with the same N and shares, or new ones."""
    sizes = _part_sizes(total, shares)
    names = [_part_name(total, shares, i) for i in range(len(sizes))]
    found = {c.name: c for c in Collection.objects.filter(owner=user, name__in=names)}
    if len(found) == len(names) and all(
        _chunk_count(found[name]) == size for name, size in zip(names, sizes, strict=True)
    ):
        stdout.write(f"Reusing the {total:,}-chunk collection ({len(names)} parts)\n")
        return [found[name] for name in names], 0.0
    drop_collections(stdout, names=list(found))
    started = time.perf_counter()
    parts = [collection_create(name=name, owner=user) for name in names]
    _build(stdout, parts, sizes)
    seconds = time.perf_counter() - started
    stdout.write(f"Built {total:,} chunks in {seconds:.0f} s\n")
    return parts, seconds


def _chunk_count(collection: Collection) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM knowledge_chunk WHERE collection_id = %s AND chunk_profile_id = %s",
            [collection.pk, collection.chunk_profile_id],
        )
        return cursor.fetchone()[0]


def drop_collections(stdout, *, names: list[str] | None = None) -> int:
    """Delete benchmark collections (all of them without ``names``); chunks first, by plain SQL."""
    collections = Collection.objects.filter(owner__username=USER)
    if names is not None:
        collections = collections.filter(name__in=names)
    dropped = 0
    for collection in collections:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM knowledge_chunk WHERE collection_id = %s", [collection.pk])
        collection.delete()
        dropped += 1
    if dropped:
        stdout.write(f"Dropped {dropped} benchmark collection(s)\n")
    return dropped


def base_chunks(stdout, count: int = BASE_CHUNKS) -> tuple[list[str], np.ndarray]:
    """``count`` real chunks and their vectors, embedded once and cached in the data directory."""
    texts = [text for _, _, group in _chunk_rounds(count) for text in group]
    backend = configured_backend()
    # Not keyed by backend: the backends' vectors agree to cosine ~0.99 (knowledge_bench backends),
    # and the derived ones are perturbed far more than that anyway.
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    cache = Path(settings.DATA_DIR) / "bench" / f"retrieve-base-{digest}.npy"
    if cache.exists():
        return texts, np.load(cache)
    stdout.write(f"Embedding {len(texts):,} real chunks once ({backend}; cached in {cache.parent})\n")
    with tqdm(total=len(texts), desc="Embedding", unit="chunk", file=sys.stderr) as bar:
        vectors = embed_texts(texts, on_batch=lambda done: bar.update(done - bar.n))
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return texts, vectors


def derived_rows(texts: list[str], vectors: np.ndarray, total: int, seed: int = 0) -> Iterator[tuple]:
    """(text, vector) for ``total`` chunks: the real ones first, then perturbations of them."""
    rng = np.random.default_rng(seed)
    base = len(texts)
    for start in range(0, total, base):
        count = min(base, total - start)
        if start == 0:
            yield from zip(texts[:count], vectors[:count], strict=True)
            continue
        index = np.arange(count)
        following = (index + 1) % base
        share = rng.uniform(0.0, 0.3, size=(count, 1)).astype(np.float32)
        noise = rng.normal(size=(count, vectors.shape[1])).astype(np.float32)
        noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
        moved = (1 - share) * vectors[index] + share * vectors[following] + noise
        moved /= np.linalg.norm(moved, axis=1, keepdims=True)
        drops = rng.integers(0, 1 << 30, size=count)
        for i in range(count):
            yield _text_variant(texts[i], texts[following[i]], int(drops[i])), moved[i]


def _text_variant(text: str, following: str, pick: int) -> str:
    sentences = _SENTENCE.split(text)
    if len(sentences) > 2:
        del sentences[1 + pick % (len(sentences) - 1)]
    return " ".join(sentences + _SENTENCE.split(following)[:1])


def _build(stdout, parts: list[Collection], sizes: list[int]) -> None:
    total = sum(sizes)
    texts, vectors = base_chunks(stdout, min(BASE_CHUNKS, total))
    rebuild = total > REBUILD_INDEXES_ABOVE
    definitions = _drop_indexes() if rebuild else {}
    rows = derived_rows(texts, vectors, total)
    with tqdm(total=total, desc="Loading", unit="chunk", file=sys.stderr, mininterval=1) as bar:
        for part, size in zip(parts, sizes, strict=True):
            _copy_part(part, size, rows, bar)
    if rebuild:
        _create_indexes(stdout, definitions)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")
        cursor.execute("ANALYZE knowledge_chunk_lexical")
        if not rebuild:
            for index in _GIN_INDEXES:
                cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])


def _copy_part(part: Collection, size: int, rows: Iterator[tuple], bar) -> None:
    per_document = 1000
    keys = [(part.pk, d) for d in range((size + per_document - 1) // per_document)]
    documents = bench_documents_create(part, keys)
    done = 0
    while done < size:
        batch = min(COPY_BATCH, size - done)
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(CHUNK_COPY_SQL) as copy,
        ):
            for n in range(done, done + batch):
                text, vector = next(rows)
                copy.write_row(
                    chunk_copy_row(
                        document_id=documents[part.pk, n // per_document],
                        collection=part,
                        model=settings.KNOWLEDGE_EMBEDDING_MODEL,
                        index=n % per_document,
                        text=text,
                        vector=dense.vector_literal(vector),
                    )
                )
        done += batch
        bar.update(batch)


def _drop_indexes() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes"
            " WHERE tablename IN ('knowledge_chunk', 'knowledge_chunk_lexical') AND indexname = ANY(%s)",
            [list(_INDEXES)],
        )
        definitions = dict(cursor.fetchall())
        for name in definitions:
            cursor.execute(f'DROP INDEX "{name}"')
    return definitions


def _create_indexes(stdout, definitions: dict[str, str]) -> None:
    """Build the dropped indexes again, with a progress bar fed by pg_stat_progress_create_index."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk")
        # An HNSW build whose graph outgrows maintenance_work_mem slows down many times over
        # (about 3 kB per 384-dimension vector with its neighbour lists); 2 GB holds some 600,000.
        cursor.execute(f"SET maintenance_work_mem = '{_index_build_memory_mb(cursor.fetchone()[0])}MB'")
        for name, definition in definitions.items():
            stop = threading.Event()
            watcher = threading.Thread(target=_watch_index_build, args=(stdout, name, stop), daemon=True)
            watcher.start()
            try:
                cursor.execute(definition)
            finally:
                stop.set()
                watcher.join()
        cursor.execute("RESET maintenance_work_mem")


def _index_build_memory_mb(rows: int) -> int:
    return max(2048, math.ceil(rows * 3 / 1024) + 512)


def _watch_index_build(stdout, name: str, stop: threading.Event) -> None:
    try:
        with tqdm(desc=f"Index {name}", unit="tuple", file=sys.stderr, mininterval=1) as bar:
            while not stop.wait(1.0):
                with connections["default"].cursor() as cursor:
                    cursor.execute(
                        "SELECT tuples_done, tuples_total FROM pg_stat_progress_create_index"
                        " WHERE relid IN ('knowledge_chunk'::regclass, 'knowledge_chunk_lexical'::regclass)"
                    )
                    row = cursor.fetchone()
                if row:
                    bar.total = row[1] or bar.total
                    bar.update(row[0] - bar.n)
    finally:
        connections["default"].close()  # this thread's own connection


# --- measurement ------------------------------------------------------------------


def _ms(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, result


# The default model's graph (migration 0039: a partial index on the column cast to its dimension).
_MODEL_ORDER = "WHERE embedding_model = %s ORDER BY (embedding::{typed}) <=> %s::{typed}"
_REFERENCE_SQL = "SELECT id FROM knowledge_chunk " + _MODEL_ORDER + " LIMIT %s"


def _model_order_params(vector) -> tuple[str, list]:
    model = settings.KNOWLEDGE_EMBEDDING_MODEL
    return dense.indexed_type(model), [
        model,
        dense.vector_literal(vector) if not isinstance(vector, str) else vector,
    ]


def _reference(vector) -> list:
    typed, params = _model_order_params(vector)
    with connection.cursor() as cursor:
        cursor.execute(_REFERENCE_SQL.format(typed=typed), [*params, LIMIT])
        return cursor.fetchall()


# Outside the measured set (knowledge.benchmarks.lexical.QUESTIONS); they load the process's caches.
WARM_UP_QUESTIONS = (
    "warm-up: which settings does a production deployment change?",
    "warm-up: how are uploaded files stored?",
    "warm-up: what does the session framework keep?",
)
WARM_UP_WORDS = 16


def _read_once(stdout) -> None:
    """Read the tables and the vector index a search visits once, as a server in use has them cached.

    pg_prewarm's job, which the embedded server lacks. Questions alone do not get there at
    1,000,000 chunks: each one visits ~1,800 pages of the 7 GB the index, the chunk rows
    (the dense search's access filter reads the row of every chunk the graph walk passes) and
    the lexical copy take, so 150 warm-up questions left most of a new question's pages on
    disk (dense 40 ms the first time, 1.8 ms the second; EXPLAIN: 1,225 of 1,812 pages read).
    The index is read by one unbounded graph walk from a stored vector; with sorting disabled,
    so that the planner walks the index rather than sorting the table by distance.
    """
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM knowledge_chunk WHERE embedding_model <> ''"
        )  # a sequential scan
        rows = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM knowledge_chunk_lexical WHERE length >= 0")
        cursor.execute("SELECT embedding::text FROM knowledge_chunk LIMIT 1")
        start = cursor.fetchone()
        walked = _walk_index(cursor, start[0], rows) if start else 0
    seconds = time.perf_counter() - started
    stdout.write(
        f"Read the chunk rows, the lexical copy and the vector index once ({walked:,} of {rows:,} chunks"
        f" reached through the index) in {seconds:.0f} s\n"
    )


def _walk_index(cursor, start_vector: str, rows: int) -> int:
    cursor.execute("SET LOCAL work_mem = '1GB'")
    cursor.execute(f"SET LOCAL hnsw.max_scan_tuples = {rows + 1}")
    cursor.execute("SET LOCAL enable_sort = off")
    typed, params = _model_order_params(start_vector)
    cursor.execute(
        "SELECT count(*) FROM (SELECT id FROM knowledge_chunk "
        + _MODEL_ORDER.format(typed=typed)
        + " LIMIT %s) AS walk",
        [*params, rows],
    )
    return cursor.fetchone()[0]


def _warm_up_questions(collection_ids: list[int], count: int) -> list[str]:
    """The process's own warm-up questions, then ``count`` others: the opening words of chunks
    spread evenly over the collection.

    The embedded PostgreSQL starts with this command, its buffer cache empty; asked first,
    every question would read its index and row pages in from the OS, as only just after a
    restart. A server in use has been asked other questions, which leave the index's upper
    layers and the busiest pages cached (100,000 chunks: dense 6.1 -> 3.2 ms p50 after 146
    other questions). ``--warm-up 0`` measures the server just started (and skips _read_once).
    """
    if count <= 0:
        return list(WARM_UP_QUESTIONS)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT min(id), max(id) FROM knowledge_chunk WHERE collection_id = ANY(%s)", [collection_ids]
        )
        low, high = cursor.fetchone()
        step = max(1, (high - low) // count)
        cursor.execute(
            "SELECT content FROM knowledge_chunk WHERE id = ANY(%s) AND collection_id = ANY(%s) ORDER BY id",
            [list(range(low, high + 1, step))[:count], collection_ids],
        )
        openings = [" ".join(row[0].split()[:WARM_UP_WORDS]) for row in cursor.fetchall()]
    return list(WARM_UP_QUESTIONS) + [text for text in openings if text]


def _measure_main(user, collection_ids, scope, questions, warm_up_questions) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in _MAIN_STAGES}
    sql, params = scope.sql(), scope.params()
    # Warm-up questions of their own: a measured question must not find its pages cached.
    rounds = [(True, q) for q in warm_up_questions] + [(False, q) for q in questions]
    for warm, question in rounds:
        query_cache_clear()
        figures = {}
        figures["embed"], vector = _ms(embed_query, question)
        figures["embed_cached"], _ = _ms(embed_query, question)
        # The whole retrieve() first, before any other stage has read this question's index and row
        # pages into PostgreSQL's cache: a question asked for the first time. The sequential variant
        # runs second and finds them cached, so it is a lower bound, not a like-for-like comparison.
        for name, alongside in (("hybrid", True), ("hybrid_sequential", False)):
            query_cache_clear()
            service.EMBED_ALONGSIDE_LEXICAL = alongside
            try:
                figures[name], _ = _ms(_retrieve_checked, user, question, collection_ids)
            finally:
                service.EMBED_ALONGSIDE_LEXICAL = True
        figures["dense"], _ = _ms(dense.dense_search, vector=vector, scope=scope, limit=LIMIT)
        figures["lexical"], _ = _ms(
            lexical.lexical_search, query=question, scope_sql=sql, scope_params=params, limit=LIMIT
        )
        figures["reference"], _ = _ms(_reference, vector)
        if not warm:
            for name in _MAIN_STAGES:
                if name in figures:
                    timings[name].append(figures[name])
    timings["embed_torch"] = _torch_reference(questions)
    return timings


def _torch_reference(questions) -> list[float]:
    """The reference encoder's time per question, in a pass of its own: torch's worker threads keep
    spinning for a while after each call and would slow whatever the main pass measured next."""
    model = get_model("torch")
    model.encode(questions[:3], normalize_embeddings=True, show_progress_bar=False)
    return [
        _ms(model.encode, [question], normalize_embeddings=True, show_progress_bar=False)[0]
        for question in questions
    ]


_MAIN_STAGES = (
    "embed",
    "embed_cached",
    "embed_torch",
    "dense",
    "lexical",
    "hybrid",
    "hybrid_sequential",
    "reference",
)


def _recall(scope, questions) -> list[float]:
    recalls = []
    for question in tqdm(questions, desc="Recall (exact scans)", unit="query", file=sys.stderr):
        vector = embed_query(question)
        approximate = dense.dense_search(vector=vector, scope=scope, limit=TOP, exact=False)
        exact = dense.dense_search(vector=vector, scope=scope, limit=TOP, exact=True)
        recalls.append(len({h.chunk_id for h in approximate} & {h.chunk_id for h in exact}) / TOP)
    return recalls


def _measure_scope(scope, questions) -> dict:
    size = dense.scope_size(scope)
    chosen_exact = dense.exact_is_cheaper(size, limit=LIMIT, scope=scope)
    auto, exact, hnsw, counts, agree = [], [], [], [], []
    for question in questions:
        vector = embed_query(question)
        auto_ms, hits = _ms(dense.dense_search, vector=vector, scope=scope, limit=LIMIT)
        exact_ms, exact_hits = _ms(dense.dense_search, vector=vector, scope=scope, limit=LIMIT, exact=True)
        hnsw_ms, _ = _ms(dense.dense_search, vector=vector, scope=scope, limit=LIMIT, exact=False)
        auto.append(auto_ms), exact.append(exact_ms), hnsw.append(hnsw_ms), counts.append(len(hits))
        top = {h.chunk_id for h in exact_hits[:TOP]}
        agree.append(len(top & {h.chunk_id for h in hits[:TOP]}) / max(1, len(top)))
    return {
        "rows": size.rows,
        "plan": "exact" if chosen_exact else "hnsw",
        "p50_ms": round(median(auto), 2),
        "p95_ms": round(percentile(auto, 95), 2),
        "exact_p50_ms": round(median(exact), 2),
        "hnsw_p50_ms": round(median(hnsw), 2),
        "min_results": min(counts),
        "always_full_k": min(counts) == min(LIMIT, size.rows),
        "recall_at_10": round(float(np.mean(agree)), 4),
    }


def load_average() -> list[str]:
    """The machine's 1, 5 and 15 minute load averages (the machine is shared: say how busy it was)."""
    return Path("/proc/loadavg").read_text().split()[:3]


def _figures(chunks, build_seconds, timings, recall, scoped) -> dict:
    figures: dict = {
        "benchmark": "retrieve",
        "chunks": chunks,
        "limit": LIMIT,
        "queries": len(timings["dense"]),
    }
    figures["build_seconds"] = round(build_seconds, 1)
    figures["backend"] = configured_backend()
    figures["query_backend"] = query_backend()
    for name, values in timings.items():
        figures[f"{name}_p50_ms"] = round(median(values), 2)
        figures[f"{name}_p95_ms"] = round(percentile(values, 95), 2)
    figures["hnsw_recall_at_10"] = round(float(np.mean(recall)), 4) if recall else None
    figures["recall_queries"] = len(recall)
    figures["dense_vs_reference_p50"] = round(
        figures["dense_p50_ms"] / max(figures["reference_p50_ms"], 1e-6), 2
    )
    figures["scopes"] = {f"{share:g}": values for share, values in scoped.items()}
    figures["load_average"] = load_average()
    return figures


def _print_table(stdout, f: dict) -> None:
    stdout.write(f"\nRetrieval over {f['chunks']:,} chunks, {f['queries']} questions, top {f['limit']}\n")
    stdout.write(f"{'stage':34} {'p50 ms':>8} {'p95 ms':>8}\n")
    labels = {
        "embed": f"query embedding ({f['query_backend']})",
        "embed_cached": "query embedding, cached",
        "embed_torch": "query embedding (torch, reference)",
        "dense": "dense (plan by cost)",
        "lexical": "lexical (BM25)",
        "hybrid": "full hybrid retrieve()",
        "hybrid_sequential": "  the same, embedding not overlapped",
        "reference": "plain pgvector top-50 (reference)",
    }
    for name, label in labels.items():
        stdout.write(f"{label:34} {f[f'{name}_p50_ms']:8.2f} {f[f'{name}_p95_ms']:8.2f}\n")
    stdout.write(f"HNSW recall@10 vs exact: {f['hnsw_recall_at_10']} over {f['recall_queries']} questions\n")
    for share, s in f["scopes"].items():
        stdout.write(
            f"scope {share:>5} ({s['rows']:,} rows): plan {s['plan']:5} p50 {s['p50_ms']:.2f} p95 "
            f"{s['p95_ms']:.2f} ms (exact {s['exact_p50_ms']:.2f}, hnsw {s['hnsw_p50_ms']:.2f}); "
            f"min results {s['min_results']} / {f['limit']}; recall@10 {s['recall_at_10']}\n"
        )
    stdout.write(f"load average {' '.join(f['load_average'])}\n\n")


def _retrieve_checked(user, question: str, collection_ids: list[int]):
    """A question as the API asks it: its scope checked (one statement), then retrieved."""
    asked = question_scope_checked(user=user, collection_ids=collection_ids)
    return retrieve(user=user, request=RetrievalRequest(question=question, asked=asked, rerank_enabled=False))
