"""The one retrieval service every caller uses (pages, API, chat, commands, evaluation).

question -> access-scoped dense + lexical candidates -> scoring (docs/design.md#scoring) and
fusion -> optional LLM reranking -> reference expansion -> token-budgeted
context. Returns a KnowledgeContext (docs/design.md#references) with per-stage timings.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.utils import timezone

from config.base.errors import KnowledgeError
from config.base.prepared import PreparedSelect, planned_once_cursor
from config.base.validation import text_clean
from knowledge.models import Chunk
from knowledge.parameter_values import resolved_config
from knowledge.retrieval import dense, lexical
from knowledge.retrieval.answerability import Verdict
from knowledge.retrieval.context import ContextBlock, assemble
from knowledge.retrieval.expansion import ExpansionResult, expand_references
from knowledge.retrieval.intent import intent_filter_sql, query_intent
from knowledge.retrieval.models_in_scope import (
    available,
    distance_sql,
    embedding_reads_any,
    model_sizes,
    models_expected,
    question_models,
    question_vectors,
    unavailable,
)
from knowledge.retrieval.passages import RETRIEVED_FIELDS, source_fields
from knowledge.retrieval.request import RetrievalRequest
from knowledge.retrieval.rerank import rerank, reranker_of
from knowledge.retrieval.scope import Scope
from knowledge.retrieval.scoring import Candidate, same_source_runners_up, select
from knowledge.retrieval.verdict import retrieval_verdict

MAX_QUESTION_CHARS = 4000
MIN_CANDIDATES = 50
INTENT_FALLBACK_BELOW = 3


@dataclass
class RetrievedChunk:
    chunk: Chunk
    scores: dict
    role: str = "primary"  # or "reference"
    source_number: int | None = None  # its [Source N] in the context, if it fit

    def as_dict(self) -> dict:
        """The API's shape of a retrieved chunk (knowledge.retrieval.passages holds every shape's fields)."""
        return source_fields(self, RETRIEVED_FIELDS)


@dataclass
class KnowledgeContext:
    question: str
    primary_chunks: list[RetrievedChunk] = field(default_factory=list)
    referenced_chunks: list[RetrievedChunk] = field(default_factory=list)
    blocks: list[ContextBlock] = field(default_factory=list)
    total_tokens: int = 0
    timings_ms: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    scope: Scope | None = None  # what was searched, for follow-up lookups such as evaluation
    # A multi-hop question (agentic loop): an extracted answer quotes every source document.
    cover_documents: bool = False
    # Whether the retrieved chunks answer the question, with the evidence (None: not assessed).
    answerability: Verdict | None = None
    # The nearest passages when the verdict refuses: shown as "closest matches", never quoted.
    closest: list[RetrievedChunk] = field(default_factory=list)
    # Each primary chunk's page's or section's next-best chunk, for an extracted answer to read the
    # page on (knowledge.retrieval.continuation); never a source of the context.
    runners_up: list[RetrievedChunk] = field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return self.answerability.answerable if self.answerability else bool(self.primary_chunks)

    @property
    def context_text(self) -> str:
        return "\n".join(block.text for block in self.blocks)

    @property
    def sources(self) -> list[RetrievedChunk]:
        """Chunks that made it into the context, in [Source N] order."""
        chosen = [c for c in self.primary_chunks + self.referenced_chunks if c.source_number]
        return sorted(chosen, key=lambda c: c.source_number)


class _Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def stage(self, name: str) -> _Stage:
        return _Stage(self.timings, name)


class _Stage:
    """Records its block's wall time in milliseconds under ``name``."""

    def __init__(self, timings: dict[str, float], name: str) -> None:
        self.timings, self.name = timings, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc) -> None:
        self.timings[self.name] = round((time.perf_counter() - self.start) * 1000, 2)


def retrieve(*, user, request: RetrievalRequest) -> KnowledgeContext:
    """Retrieve for the request's question from what ``user`` may read within its scope
    (knowledge.retrieval.request explains each field)."""
    question = question_clean(request.question)
    asked = request.asked
    config = resolved_config(asked.profile, request.overrides, request.k)
    rerank_ids = set(asked.rerank_ids) if request.rerank_enabled else set()
    scope = Scope.of_chunk_sets(asked.chunk_sets)  # read by the edge's access check
    if request.document_ids is not None:
        scope = scope.restricted_to(request.document_ids)
    timer = _Timer()
    started = time.perf_counter()
    context = KnowledgeContext(question=question, config=config, scope=scope)
    search, candidates, context.stats = _searched(question, scope, config, timer)
    config = _without_failed_models(search, config, context.stats)
    # Reranking looks at maxDocs x 3 candidates, then keeps maxDocs (docs/design.md#scoring).
    pool = {**config, "maxDocs": config["maxDocs"] * 3} if rerank_ids else config
    with timer.stage("score"):
        chosen = _select(question, candidates, pool, search.models)
    chunks = _chunks_for(chosen, candidates)
    primary = _retrieved(chosen, chunks)
    with timer.stage("answerability"):
        context.answerability = retrieval_verdict(search, candidates, chosen, primary, config)
    if rerank_ids:
        with timer.stage("rerank"):
            primary, context.stats["rerank"] = rerank(
                question,
                primary,
                collection_ids=rerank_ids,
                user_id=getattr(user, "pk", None),
                reranker=reranker_of(asked.profile),
            )
    context.primary_chunks = primary[: config["maxDocs"]]
    context.runners_up = _runners_up(context.primary_chunks, candidates, chunks)
    with timer.stage("expand"):
        expansion = expand_references([c.chunk for c in primary], scope=scope)
    context.referenced_chunks = [RetrievedChunk(c, {}, role="reference") for c in expansion.chunks]
    context.stats.update(_expansion_stats(expansion))
    with timer.stage("context"):
        _assemble(context, max_tokens=config["maxTokens"])
    # Wall time: the embedding overlaps the statistics and lexical stages.
    context.timings_ms = {**timer.timings, "total": round((time.perf_counter() - started) * 1000, 2)}
    return context


def _without_failed_models(search: _Search, config: dict, stats: dict) -> dict:
    """The configuration the search is ranked and judged under when an embedding endpoint failed:
    with no vector at all, by the lexical search alone (no cosine to rank by or to hold a floor
    against); the stats say which model failed and why."""
    failed = unavailable(search.vectors)
    if not failed:
        return config
    stats["embedding_unavailable"] = failed
    if available(search.vectors):
        return config
    stats["search"] = "lexical only: the embedding endpoint failed"
    return {**config, "semanticWeight": 0.0, "minRelevanceScore": LEXICAL_ONLY_RELEVANCE}


# With no cosine, nothing is dropped by one: the lexical ranking and the verdict's lexical tests decide.
LEXICAL_ONLY_RELEVANCE = -1.0


def _runners_up(
    primary: list[RetrievedChunk], candidates: list[Candidate], chunks: dict
) -> list[RetrievedChunk]:
    pages = [(r.chunk.document_id, r.chunk.source_ref) for r in primary]
    shown = {r.chunk.pk for r in primary}
    return [
        RetrievedChunk(r.chunk, r.scores, role="runner_up")
        for r in _retrieved(same_source_runners_up(pages, candidates, exclude=shown), chunks)
    ]


def _searched(question: str, scope: Scope, config, timer: _Timer) -> tuple[_Search, list[Candidate], dict]:
    """Both searches' candidates; the lexical search needs no vector, so it runs while the
    question is being embedded (with the models the scope held last time: the statistics tell
    which models it holds now, and a model missed is embedded then)."""
    vectors_of = _embedding_started(question, timer, models_expected(scope))
    with timer.stage("statistics"):
        terms = _statistics(question, scope)
    sizes = model_sizes(scope, terms)
    limit = max(MIN_CANDIDATES, config["maxDocs"] * 10)
    intent = query_intent(question) if config["queryIntent"] else None
    first_lexical = _lexical(question, scope, terms, config, limit, intent_filter_sql(intent), timer)
    vectors = _vectors_for(question, vectors_of(), sizes, timer)
    search = _Search(question, vectors, scope, terms, sizes)
    candidates, stats = _candidates(search, config, timer, intent, limit, first_lexical)
    return search, candidates, stats


def _vectors_for(question: str, vectors: dict, sizes: dict, timer: _Timer) -> dict:
    """The question's vector under every model in scope (those not embedded ahead of time now);
    a vector embedded ahead for a model the scope no longer holds is dropped (its cosine would be
    computed against chunks of another model)."""
    missing = [model for model in sizes if model not in vectors]
    if missing:
        with timer.stage("embed_more"):
            vectors = {**vectors, **question_vectors(question, question_models(missing))}
    return {model: vector for model, vector in vectors.items() if model in sizes} if sizes else vectors


def question_clean(question: str) -> str:
    """The question stripped, or KnowledgeError when it is empty or too long."""
    question = text_clean(question, field="the question")
    if not question:
        raise KnowledgeError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise KnowledgeError(f"the question is {len(question)} characters; the limit is {MAX_QUESTION_CHARS}")
    return question


@dataclass(frozen=True)
class _Search:
    """What one retrieval's searches share: the question, its vector per embedding model, the
    scope, its statistics and its size per model (the models whose chunks the scope holds)."""

    question: str
    vectors: dict
    scope: Scope
    terms: lexical.ScopeStatistics
    sizes: dict[str, dense.ScopeSize | None]

    @property
    def models(self) -> tuple[str, ...]:
        # An empty scope is searched (and finds nothing) under the model the question was embedded with.
        return tuple(self.sizes) or tuple(self.vectors)


# The question's embedding runs on one of these threads while the caller's thread does the
# lexical round trips; both release the GIL (onnxruntime / torch, and the database socket).
EMBED_ALONGSIDE_LEXICAL = True
EMBEDDING_THREADS = 4
_pools: dict[int, tuple[ThreadPoolExecutor, threading.BoundedSemaphore]] = {}


def _embedding_pool() -> tuple[ThreadPoolExecutor, threading.BoundedSemaphore]:
    """This process's threads and free-slot count (per process id: threads do not survive a fork)."""
    pid = os.getpid()
    if pid not in _pools:
        _pools.clear()
        _pools[pid] = (
            ThreadPoolExecutor(max_workers=EMBEDDING_THREADS, thread_name_prefix="query-embedding"),
            threading.BoundedSemaphore(EMBEDDING_THREADS),
        )
    return _pools[pid]


def _embedding_started(question: str, timer: _Timer, models: tuple[str, ...]) -> Callable[[], dict]:
    """Start embedding the question under ``models``; returns a function that waits for the vectors.

    On a thread of its own when one is free (no database connection is used
    there: the embedding only computes), else inline, so a burst of requests
    never queues behind each other's embeddings.
    """
    pool, slots = _embedding_pool()
    models = question_models(models)  # here: the thread below has no database connection
    if not EMBED_ALONGSIDE_LEXICAL or not slots.acquire(blocking=False):
        with timer.stage("embed"):
            vectors = question_vectors(question, models)
        return lambda: vectors

    def embed():
        try:
            begun = time.perf_counter()
            vectors = question_vectors(question, models)
            return vectors, round((time.perf_counter() - begun) * 1000, 2)
        finally:
            slots.release()

    future = pool.submit(embed)

    def wait():
        with timer.stage("embed_wait"):  # what the embedding added after the lexical search
            vectors, timer.timings["embed"] = future.result()
        return vectors

    return wait


def _statistics(question: str, scope: Scope) -> lexical.ScopeStatistics:
    """One statistics lookup serves the dense plan, the lexical search and the answerability verdict.

    Chunk-level conditions (documents, the intent filter) do not change the
    partition statistics, so the same lookup holds for every search below.
    """
    return lexical.scope_statistics(query=question, scope_sql=scope.sql(), scope_params=scope.params())


def _lexical(question, scope: Scope, terms, config, limit, extra_sql, timer) -> list:
    if not config["hybrid"]:
        return []
    with timer.stage("lexical"):
        # Per row: as a join, the planner hashed every chunk matching the candidate query before
        # the candidate limit could stop the scan (1,000,000 chunks: 14,262 rows, 60 of 104 ms).
        # The collections beside it as a plain condition: with other collections in the table, the
        # full-text index alone matched 1,000-3,000 of their chunks to keep 60-100 of the scope's.
        collections, collection_ids = scope.collection_ids_sql()
        return lexical.lexical_search(
            query=question,
            scope_sql=f"{scope.sql(per_row=True)}{collections} {extra_sql}",
            scope_params=[*scope.params(), *collection_ids],
            limit=limit,
            stats=terms,
        )


def _candidates(search: _Search, config, timer, intent, limit, first_lexical) -> tuple[list[Candidate], dict]:
    """Candidates within the question's intent filter (its lexical hits already found), or, when
    fewer than INTENT_FALLBACK_BELOW of them pass the relevance threshold, within the whole scope."""
    extra_sql = intent_filter_sql(intent)
    candidates = _search(search, config, limit, extra_sql, timer, first_lexical)
    stats = {"intent": intent, "intent_fallback": False, "candidates": len(candidates)}
    if intent and _above_threshold(candidates, config) < INTENT_FALLBACK_BELOW:
        lexical_hits = _lexical(search.question, search.scope, search.terms, config, limit, "", timer)
        candidates = _search(search, config, limit, "", timer, lexical_hits)
        stats.update(intent_fallback=True, candidates=len(candidates))
    return candidates, stats


def _above_threshold(candidates, config) -> int:
    return sum(c.similarity >= config["minRelevanceScore"] for c in candidates)


def _search(search: _Search, config, limit, extra_sql, timer, lexical_hits) -> list[Candidate]:
    """Dense hits per embedding model (each on its own chunks and index), fused by rank, and the
    lexical hits, which need no model."""
    vectors = available(search.vectors)
    with timer.stage("dense"):
        groups = [
            dense.dense_search(
                vector=vectors[model],
                scope=search.scope.of_model(model),
                limit=limit,
                extra_sql=extra_sql,
                size=search.sizes.get(model),
            )
            for model in search.models
            if model in vectors
        ]
        dense_hits = dense.fused_by_rank(groups, limit=limit)
    with timer.stage("candidates"):
        return _merge(search.vectors, dense_hits, lexical_hits)


# Every candidate's row facts and cosine distance in one round trip (the dense hits' distances
# are known, but computing them again for ~50 rows costs less than a second query). The order
# is the chunk model's, which scoring's ties have always fallen back on.
_CANDIDATES_SQL = """
    SELECT c.id, c.document_id, c.collection_id, d.source_date, c.source_ref, {distance}, c.embedding_model
    FROM knowledge_chunk AS c JOIN knowledge_document AS d ON d.id = c.document_id
    WHERE c.id = ANY(%s)
    ORDER BY c.document_id, c.index
"""


def _merge(vectors: dict, dense_hits, lexical_hits) -> list[Candidate]:
    ids = list(dict.fromkeys([hit.chunk_id for hit in dense_hits] + [hit.chunk_id for hit in lexical_hits]))
    if not ids:
        return []
    distance, params = distance_sql(vectors)
    with planned_once_cursor() as cursor:
        cursor.execute(_CANDIDATES_SQL.format(distance=distance), [*params, ids])
        rows = cursor.fetchall()
    dense_rank = {hit.chunk_id: rank for rank, hit in enumerate(dense_hits, start=1)}
    lexical_by_id = {hit.chunk_id: hit for hit in lexical_hits}
    candidates = []
    for chunk_id, document_id, collection_id, source_date, source_ref, distance, model in rows:
        lex = lexical_by_id.get(chunk_id)
        candidates.append(
            Candidate(
                chunk_id=chunk_id,
                document_id=document_id,
                collection_id=collection_id,
                similarity=1.0 - distance,
                source_date=source_date,
                dense_rank=dense_rank.get(chunk_id),
                lexical_rank=lex.rank if lex else None,
                lexical_score=lex.score if lex else None,
                source_ref=source_ref,
                lexemes=lex.lexemes if lex else None,
                # Several models: scoring ranks each model's candidates apart (scoring.semantic_ranking).
                extra={"embedding_model": model} if len(available(vectors)) > 1 else {},
            )
        )
    return candidates


def _select(question: str, candidates: list[Candidate], config, models: tuple[str, ...]) -> list[Candidate]:
    """Scored and chosen (scoring.py); in hybrid search, a question the embedding model cannot read
    is ranked by its words alone: the semantic ranking would be noise (on the Japanese document
    of the corpus it put a phrase's own section below another one, 2026-11-25). Dense-only search
    (hybrid off) has no lexical ranking to fall back on and stays as configured."""
    if config["hybrid"] and not embedding_reads_any(question, models):
        config = {**config, "semanticWeight": 0.0}
    return select(candidates, config=config, today=timezone.localdate(), hybrid=config["hybrid"])


# Chunks with their documents, as select_related("document") loads them. Not the vectors nor the
# full-text vectors: nothing downstream reads them (they would load lazily), each vector is 384
# numbers parsed from text and a full-text vector is as long as its chunk.
_CHUNKS_WITH_DOCUMENTS = PreparedSelect(
    Chunk, related="document", defer=("embedding", "search_vector"), where='"m"."id" = ANY(%s)'
)


def _chunks_for(chosen: list[Candidate], candidates: list[Candidate]) -> dict:
    """The chosen candidates' chunks and every runner-up's they may need, in one round trip.

    Which chunks are shown is known only after reranking, but they are chosen ones, on the chosen
    candidates' pages: each page's best candidate not shown is either a chosen one or the page's
    best one not chosen, so loading those covers every runner-up."""
    pages = [(c.document_id, c.source_ref) for c in chosen]
    chosen_ids = {c.chunk_id for c in chosen}
    others = same_source_runners_up(pages, candidates, exclude=chosen_ids)
    ids = [c.chunk_id for c in chosen] + [c.chunk_id for c in others]
    if not ids:
        return {}
    return {chunk.pk: chunk for chunk in _CHUNKS_WITH_DOCUMENTS.fetch([ids])}


def _retrieved(chosen: list[Candidate], chunks: dict) -> list[RetrievedChunk]:
    return [RetrievedChunk(chunks[c.chunk_id], _scores(c)) for c in chosen if c.chunk_id in chunks]


def _scores(c: Candidate) -> dict:
    return {
        "dense_rank": c.dense_rank,
        "lexical_rank": c.lexical_rank,
        "lexical_score": None if c.lexical_score is None else round(c.lexical_score, 4),
        "fused": round(c.fused, 6),
        "similarity": round(c.similarity, 4),
        "freshness": round(c.freshness, 4),
        "adjusted": round(c.adjusted, 4),
    }


def _expansion_stats(expansion: ExpansionResult) -> dict:
    return {
        "references": len(expansion.chunks),
        "reference_depth": expansion.depth_reached,
        "missing_refs": expansion.missing_refs,
        "cycles_skipped": expansion.cycles_skipped,
        "partial": expansion.partial,
        "limit_hit": expansion.limit_hit,
    }


def context_from_chunks(
    *, question: str, config: dict, scope: Scope | None, ranked: list[list[RetrievedChunk]], timings_ms=None
) -> KnowledgeContext:
    """One context from several ranked lists (plan steps, query variants, a graded subset).

    The lists are interleaved by rank, so every step contributes its best
    chunks first; a chunk found twice counts once. References follow the
    primary chunks; the token budget decides what fits, as for one search.
    """
    primary = {item.chunk.pk: item for item in interleave(ranked)}
    for item in primary.values():
        item.role, item.source_number = "primary", None
    context = KnowledgeContext(question=question, config=config, scope=scope, timings_ms=timings_ms or {})
    context.primary_chunks = list(primary.values())
    with_references = (
        expand_references([c.chunk for c in context.primary_chunks], scope=scope) if scope else None
    )
    if with_references is not None:
        context.referenced_chunks = [
            RetrievedChunk(c, {}, role="reference") for c in with_references.chunks if c.pk not in primary
        ]
    _assemble(context, max_tokens=config["maxTokens"])
    return context


def interleave(ranked: list[list[RetrievedChunk]]) -> list[RetrievedChunk]:
    """The lists' items by rank (every list's first, then every second ...), each chunk once."""
    seen: dict[int, RetrievedChunk] = {}
    for rank in range(max((len(chunks) for chunks in ranked), default=0)):
        for chunks in ranked:
            if rank < len(chunks):
                seen.setdefault(chunks[rank].chunk.pk, chunks[rank])
    return list(seen.values())


def _assemble(context: KnowledgeContext, *, max_tokens: int) -> None:
    ordered = context.primary_chunks + context.referenced_chunks
    items = [
        {
            "title": r.chunk.document.display_title,
            "filename": r.chunk.document.filename,
            "source_ref": r.chunk.source_ref,
            "content": r.chunk.content,
        }
        for r in ordered
    ]
    blocks, total = assemble(items, max_tokens=max_tokens)
    for index, block in blocks:
        ordered[index].source_number = block.number
    context.blocks = [block for _, block in blocks]
    context.total_tokens = total
    context.stats["left_out_for_budget"] = len(ordered) - len(blocks)
