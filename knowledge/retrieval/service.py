"""The one retrieval service every caller uses (pages, API, chat, commands, evaluation).

question -> access-scoped dense + lexical candidates -> scoring (docs/design.md#scoring) and
fusion -> optional LLM reranking -> reference expansion -> token-budgeted
context. Returns a KnowledgeContext (docs/design.md#references) with per-stage timings.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from config.errors import KnowledgeError
from config.validation import text_clean
from knowledge.clients.embedding import embed_query
from knowledge.config import resolved_config
from knowledge.models import Chunk, Profile
from knowledge.retrieval import dense, lexical
from knowledge.retrieval.answerability import (
    AGREEMENT_RANK,
    Evidence,
    Verdict,
    coverage_of,
    margin_of,
    verdict_for,
)
from knowledge.retrieval.context import ContextBlock, assemble
from knowledge.retrieval.expansion import ExpansionResult, expand_references
from knowledge.retrieval.intent import intent_filter_sql, query_intent
from knowledge.retrieval.rerank import rerank
from knowledge.retrieval.scope import Scope, search_scope
from knowledge.retrieval.scoring import Candidate, select

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
        document = self.chunk.document
        return {
            "chunk_id": self.chunk.pk,
            "document_id": document.pk,
            "document": document.filename,
            "title": document.display_title,
            "collection_id": self.chunk.collection_id,
            "source_ref": self.chunk.source_ref,
            "page": self.chunk.page,
            "content": self.chunk.content,
            "role": self.role,
            "source_number": self.source_number,
            "scores": self.scores,
        }


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

    def stage(self, name: str):
        timer = self

        class _Stage:
            def __enter__(self):
                self.start = time.perf_counter()

            def __exit__(self, *exc):
                timer.timings[name] = round((time.perf_counter() - self.start) * 1000, 2)

        return _Stage()


def retrieve(
    *,
    user,
    question: str,
    profile: Profile | None = None,
    collection_ids: Iterable[int] | None = None,
    k: int | None = None,
    overrides: dict | None = None,
    chunk_profile_id: int | None = None,
    document_ids: Iterable[int] | None = None,
    rerank_enabled: bool = True,
) -> KnowledgeContext:
    """Retrieve for ``question`` from what ``user`` may read within the profile's (or given) collections.

    ``k`` replaces maxDocs for this call; ``overrides`` are per-call parameter
    values (evaluation runs) applied above the profile but below admin locks;
    ``chunk_profile_id`` searches that chunk profile instead of the active ones;
    ``document_ids`` narrows the search to those documents inside the SQL
    (multi-step retrieval), within what access allows; ``rerank_enabled=False``
    skips the profile's LLM reranking (to measure what it changes).
    """
    question = question_clean(question)
    config = resolved_config(profile, overrides, k)
    scope_ids, rerank_ids = search_collections(profile, collection_ids)
    rerank_ids = rerank_ids if rerank_enabled else set()
    scope = search_scope(user=user, collection_ids=scope_ids, chunk_profile_id=chunk_profile_id)
    if document_ids is not None:
        scope = scope.restricted_to(document_ids)
    timer = _Timer()
    context = KnowledgeContext(question=question, config=config, scope=scope)
    with timer.stage("embed"):
        vector = embed_query(question)
    with timer.stage("statistics"):
        search = _prepare(question, vector, scope)
    candidates, context.stats = _candidates(search, config, timer)
    # Reranking looks at maxDocs x 3 candidates, then keeps maxDocs (docs/design.md#scoring).
    pool = {**config, "maxDocs": config["maxDocs"] * 3} if rerank_ids else config
    with timer.stage("score"):
        chosen = select(candidates, config=pool, today=timezone.localdate(), hybrid=config["hybrid"])
    with timer.stage("answerability"):
        context.answerability = _answerability(search, candidates, chosen, config)
    primary = _load(chosen)
    if rerank_ids:
        with timer.stage("rerank"):
            primary, context.stats["rerank"] = rerank(question, primary, collection_ids=rerank_ids)
    context.primary_chunks = primary[: config["maxDocs"]]
    with timer.stage("expand"):
        expansion = expand_references([c.chunk for c in primary], scope=scope)
    context.referenced_chunks = [RetrievedChunk(c, {}, role="reference") for c in expansion.chunks]
    context.stats.update(_expansion_stats(expansion))
    with timer.stage("context"):
        _assemble(context, max_tokens=config["maxTokens"])
    context.timings_ms = {**timer.timings, "total": round(sum(timer.timings.values()), 2)}
    return context


def question_clean(question: str) -> str:
    """The question stripped, or KnowledgeError when it is empty or too long."""
    question = text_clean(question, field="the question")
    if not question:
        raise KnowledgeError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise KnowledgeError(f"the question is {len(question)} characters; the limit is {MAX_QUESTION_CHARS}")
    return question


def search_collections(profile, collection_ids) -> tuple[list[int] | None, set[int]]:
    """The collections to search and those whose results the LLM may rerank."""
    if profile is not None:
        links = list(profile.profile_collections.values_list("collection_id", "reranking"))
        ids = [cid for cid, _ in links]
        if collection_ids is not None:
            ids = [cid for cid in ids if cid in set(collection_ids)]
            if not ids:
                raise KnowledgeError("none of the requested collections is in the profile; ask them directly")
        if not ids:
            raise KnowledgeError("the profile has no collections to search; add a collection to it first")
        return ids, {cid for cid, wanted in links if wanted}
    if collection_ids is None:
        raise KnowledgeError("choose a profile or at least one collection to search")
    return list(collection_ids), set()


@dataclass(frozen=True)
class _Search:
    """What one retrieval's searches share: the question, its vector, the scope and its statistics."""

    question: str
    vector: object
    scope: Scope
    terms: lexical.ScopeStatistics
    size: dense.ScopeSize | None


def _prepare(question, vector, scope: Scope) -> _Search:
    """One statistics lookup serves the dense plan, the lexical search and the answerability verdict.

    Chunk-level conditions (documents, the intent filter) do not change the
    partition statistics, so the same lookup holds for every search below.
    """
    terms = lexical.scope_statistics(query=question, scope_sql=scope.sql(), scope_params=scope.params())
    size = dense.ScopeSize(rows=terms.chunks, table=terms.table_chunks) if terms.table_chunks else None
    return _Search(question, vector, scope, terms, size)


def _candidates(search: _Search, config, timer) -> tuple[list[Candidate], dict]:
    limit = max(MIN_CANDIDATES, config["maxDocs"] * 10)
    intent = query_intent(search.question)
    candidates = _search(search, config, limit, intent_filter_sql(intent), timer)
    stats = {"intent": intent, "intent_fallback": False, "candidates": len(candidates)}
    if intent and _above_threshold(candidates, config) < INTENT_FALLBACK_BELOW:
        candidates = _search(search, config, limit, "", timer)
        stats.update(intent_fallback=True, candidates=len(candidates))
    return candidates, stats


def _above_threshold(candidates, config) -> int:
    return sum(c.similarity >= config["minRelevanceScore"] for c in candidates)


def _search(search: _Search, config, limit, extra_sql, timer) -> list[Candidate]:
    scope = search.scope
    with timer.stage("dense"):
        dense_hits = dense.dense_search(
            vector=search.vector, scope=scope, limit=limit, extra_sql=extra_sql, size=search.size
        )
    lexical_hits = []
    if config["hybrid"]:
        with timer.stage("lexical"):
            lexical_hits = lexical.lexical_search(
                query=search.question,
                scope_sql=f"{scope.sql()} {extra_sql}",
                scope_params=scope.params(),
                limit=limit,
                stats=search.terms,
            )
    with timer.stage("candidates"):
        return _merge(search.vector, dense_hits, lexical_hits)


# Every candidate's row facts and cosine distance in one round trip (the dense hits' distances
# are known, but computing them again for ~50 rows costs less than a second query). The order
# is the chunk model's, which scoring's ties have always fallen back on.
_CANDIDATES_SQL = """
    SELECT c.id, c.document_id, c.collection_id, d.source_date, c.source_ref, c.embedding <=> %s::vector
    FROM knowledge_chunk AS c JOIN knowledge_document AS d ON d.id = c.document_id
    WHERE c.id = ANY(%s)
    ORDER BY c.document_id, c.index
"""


def _merge(vector, dense_hits, lexical_hits) -> list[Candidate]:
    ids = list(dict.fromkeys([hit.chunk_id for hit in dense_hits] + [hit.chunk_id for hit in lexical_hits]))
    if not ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_CANDIDATES_SQL, [dense.vector_literal(vector), ids])
        rows = cursor.fetchall()
    dense_rank = {hit.chunk_id: rank for rank, hit in enumerate(dense_hits, start=1)}
    lexical_by_id = {hit.chunk_id: hit for hit in lexical_hits}
    candidates = []
    for chunk_id, document_id, collection_id, source_date, source_ref, distance in rows:
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
            )
        )
    return candidates


def _answerability(search: _Search, candidates: list[Candidate], chosen: list[Candidate], config) -> Verdict:
    """The verdict on the best chunk chosen, from what both searches found (see answerability.py)."""
    evidence = answerability_evidence(search.question, candidates, chosen, search.scope, terms=search.terms)
    return verdict_for(
        evidence, min_answerability=config["minAnswerability"], min_relevance=config["minRelevanceScore"]
    )


def answerability_evidence(
    question, candidates: list[Candidate], chosen: list[Candidate], scope, *, terms=None
) -> Evidence:
    similarities = [c.similarity for c in candidates if c.dense_rank is not None]
    if not chosen or not similarities:
        return Evidence(
            best_similarity=max(similarities, default=0.0), margin=0.0, coverage=0.0, agreement=0.0
        )
    best = chosen[0]
    weights = lexical.question_term_weights(
        query=question, scope_sql=scope.sql(), scope_params=scope.params(), stats=terms
    )
    present = lexical.chunk_lexemes(chunk_id=best.chunk_id, lexemes=list(weights))
    top_dense = min((c for c in candidates if c.dense_rank is not None), key=lambda c: c.dense_rank)
    agree = top_dense.lexical_rank is not None and top_dense.lexical_rank <= AGREEMENT_RANK
    return Evidence(
        best_similarity=max(similarities),
        margin=margin_of(similarities),
        coverage=coverage_of(weights, present),
        agreement=1.0 if agree else 0.0,
    )


def _load(chosen: list[Candidate]) -> list[RetrievedChunk]:
    chunks = Chunk.objects.select_related("document").in_bulk([c.chunk_id for c in chosen])
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
