"""Lexical search: BM25 ranking computed inside PostgreSQL, fast at 100,000+ chunks.

Two round trips, both bounded:

1. Statistics. The query text goes through the function that makes the chunks'
   generated ``search_vector`` column (``knowledge_search_vector``, migration
   0019: 'english' lexemes plus the character bigrams of Japanese, Chinese,
   Korean and Thai text), so its lexemes are exactly the chunks'; operators, quotes and other
   syntax are plain punctuation to that parser, so no input can make it raise.
   The same statement sums, over the (collection, chunk profile) partitions the
   caller's scope admits, the chunk count, total length and each lexeme's
   document frequency from the trigger-maintained tables of migration 0004.
   IDF is therefore computed over the searched scope, not the whole corpus:
   another user's private collections never leak into a score (a score shifted
   by a rare word in someone else's data would reveal that it exists), and a
   term's specificity is that of the collections being searched.

2. Candidates and exact BM25. OR semantics over every term would make the GIN
   bitmap cover most of the table (the slow OR + ts_rank_cd reference).
   Instead the candidates are the chunks whose terms carry enough IDF mass:
   "sum of the idf of the query terms present >= threshold", written out as an
   AND/OR tsquery over the highest-IDF terms and evaluated by the GIN index.
   The threshold is the lowest one whose expected match count, under term
   independence, stays near a budget: a long question still matches chunks
   holding any distinctive subset of its words, while the many chunks holding
   only its commonest words are never fetched. This is MaxScore's reasoning
   with the GIN index doing the skipping; in the same spirit a candidate must
   hold one of the rarest terms (as many as a postings budget allows), so the
   scan never walks the long lists of common words. Small scopes skip it: when
   the chunks matching any term are few, all of them are candidates and the
   result is exact. The candidates, filtered by the caller's scope in the same
   statement, are scored with exact BM25 (k1=1.2, b=0.75) from their tsvectors in
   the narrow copy knowledge_chunk_lexical (see ``_SCORE_SQL``); if that does not
   fill ``limit``, a lower threshold and then plain OR are tried.

A chunk's length is its number of lexeme occurrences (stop words excluded), the
count the triggers sum into the partition totals and store with the copy.
knowledge/benchmarks/lexical.py measures the ranking against an exact BM25 over
every chunk.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from django.db import connection

from config.base.prepared import planned_once_cursor
from knowledge.models.documents import SEARCH_VECTOR_FUNCTION
from knowledge.text.words import is_grammatical_bigram

K1 = 1.2
B = 0.75
# 300 words are ~2,000 characters; beyond this the tail only costs parsing.
MAX_QUERY_CHARS = 4000
# Lexemes looked up for a query before keeping the rarest MAX_TERMS of them.
MAX_LOOKUP_TERMS = 256
MAX_TERMS = 32
# The highest-IDF terms that shape the candidate tsquery; the rest are scored only. The GIN scan
# reads every posting of every candidate term: at 100,000 chunks 8 terms instead of 12 cut the p95
# by ~20% and matched exact BM25's top 10 as well or better (0.986 vs 0.980 overlap, 50 questions).
CANDIDATE_TERMS = 8
# Expected candidates under independence (and at least this many per hit);
# real counts run 2-10x higher because the words of a question co-occur.
CANDIDATE_BUDGET = 200
CANDIDATES_PER_HIT = 4
# Terms in more than this share of the scope's chunks stay out of the candidate
# query: their posting lists cost the GIN scan most and their IDF decides least.
MAX_CANDIDATE_SHARE = 0.2
# The retry's budget when the first threshold query does not fill the limit.
RETRY_BUDGET_FACTOR = 10
# Expected chunks matching any term below which every one of them is scored.
OR_BUDGET = 1000
# Hard bound on chunks scored per round trip, whatever the query.
MAX_CANDIDATES = 5000
# IDF weights are quantised to this many steps of the largest one, which keeps
# the threshold computation a small integer convolution.
WEIGHT_STEPS = 32
# The GIN scan evaluates the candidate tsquery for every posting of its terms;
# above this many operands the commonest candidate term is dropped.
MAX_QUERY_NODES = 100
# The GIN scan steps through every posting of the terms a match may start from, evaluating the
# whole tsquery at each (about 8 ns per posting and operand here, EXPLAIN ANALYZE at 100,000
# chunks), so long lists of common words under a long threshold query cost most of a search,
# and bring the most candidates to score. When that work (postings x operands) exceeds
# LEADING_FREE_WORK, a chunk is a candidate only if it also holds one of the rarest candidate
# terms, taken rarest first while their postings add up to at most LEADING_POSTINGS_SHARE of
# the scope (LEADING_POSTINGS_MIN at least); chunks holding only commoner words are not
# fetched. Measured against exact BM25 over all chunks (top-10 agreement): unchanged on the
# retrieval benchmark's questions at 100,000 (0.986) and 1,000,000 chunks (0.92) and on
# knowledge_bench lexical's (0.980), lexical p95 at 100,000 chunks -30 to -40%. Without the free
# allowance a four-word question of knowledge_bench lexical lost 2 of its top 10 (its scan: 9
# operands over 11,777 postings); with 1,000,000 the p95 gain was half lost.
LEADING_FREE_WORK = 150_000
LEADING_POSTINGS_SHARE = 0.02
LEADING_POSTINGS_MIN = 5000


@dataclass(frozen=True)
class LexicalHit:
    chunk_id: int
    rank: int  # 1-based
    score: float  # BM25
    # The scored query lexemes (the rarest MAX_TERMS present in the scope) the chunk holds.
    lexemes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ScopeStatistics:
    chunks: int
    avg_length: float
    df: dict[str, int]  # lexemes of the query, in query order; 0 = absent from the scope
    # Chunks in the whole table (every partition): dense search sizes its plan by chunks / table.
    table_chunks: int = 0
    # Per embedding model: (chunks in the scope, chunks in the table). Which models a question must
    # be embedded with, and each model's dense plan (its own HNSW graph holds only its chunks).
    models: dict[str, tuple[int, int]] = field(default_factory=dict)


def sanitise_query(text) -> str:
    """Text PostgreSQL will accept as a parameter: no NUL, no lone surrogate, bounded."""
    if not isinstance(text, str):
        return ""
    text = text[:MAX_QUERY_CHARS].replace("\x00", " ")
    return text.encode("utf-8", "replace").decode("utf-8").strip()


_TERMS_SQL = f"""
    SELECT u.lexeme, u.positions[1] AS first_position
    FROM unnest({SEARCH_VECTOR_FUNCTION}(%s)) AS u
    ORDER BY first_position, u.lexeme
    LIMIT %s
"""


def query_terms(text: str, *, max_terms: int = MAX_TERMS) -> list[str]:
    """The query's distinct lexemes, made like the chunks' (stemmed words, CJK bigrams), in order."""
    text = sanitise_query(text)
    if not text or max_terms <= 0:
        return []
    with planned_once_cursor() as cursor:
        cursor.execute(_TERMS_SQL, [text, max_terms])
        return [row[0] for row in cursor.fetchall()]


def lexical_search(
    *, query: str, scope_sql: str, scope_params: list, limit: int = 50, stats: ScopeStatistics | None = None
) -> list[LexicalHit]:
    """The ``limit`` best chunks by BM25 among those satisfying ``scope_sql`` (over alias ``c``).

    ``stats`` are the query's statistics over the scope when the caller already has them
    (``scope_statistics``; chunk-level conditions do not change them, see below).
    """
    text = sanitise_query(query)
    limit = min(limit, MAX_CANDIDATES) if isinstance(limit, int) else 0
    if not text or limit <= 0:
        return []
    with planned_once_cursor() as cursor:
        if stats is None:
            stats = _scope_statistics(cursor, text, scope_sql, list(scope_params))
        weights = term_weights(stats)
        if not weights:
            return []
        found: dict[int, tuple[float, frozenset[str]]] = {}
        for candidates in _candidate_queries(weights, stats, limit):
            for id_, score, lexemes in _score(
                cursor, candidates, weights, stats, scope_sql, list(scope_params), limit
            ):
                found[id_] = (score, lexemes)
            if len(found) >= limit:
                break
    # A wider retry is capped like the first; merging keeps what the first found.
    best = sorted(found.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
    return [
        LexicalHit(chunk_id=id_, rank=i, score=score, lexemes=lexemes)
        for i, (id_, (score, lexemes)) in enumerate(best, 1)
    ]


# The partitions whose statistics count are those the scope admits, decided
# without touching a chunk: the scope is evaluated once per partition on a
# stand-in chunk row whose collection, profile and model are the partition's and whose
# other columns are NULL. Conditions on collection, profile and model (access control,
# the profile filter) decide; chunk-level ones (a document, metadata) come out
# NULL and do not exclude -- "IS NOT FALSE" -- so IDF is that of the admitted
# collections, steadier than one document's. Probing real chunks instead costs,
# per unreadable collection, a walk over its chunks (measured: 40-560 ms for a
# 106,000-chunk table against ~1 ms here). Contract: a chunk-level condition
# must not be false on an all-NULL row (no IS NOT NULL / coalesce tricks).
# {model: [chunks in the partitions admitted, chunks in the table]}, over a "partitions" CTE.
MODEL_COUNTS_SQL = """
    SELECT jsonb_object_agg(a.embedding_model, jsonb_build_array(
        coalesce((SELECT sum(p.chunks) FROM partitions AS p WHERE p.embedding_model = a.embedding_model), 0),
        a.chunks))
    FROM (SELECT embedding_model, sum(chunks) AS chunks FROM knowledge_lexical_partition
          WHERE chunks > 0 GROUP BY 1) AS a
"""

_STATISTICS_SQL = f"""
    WITH terms AS ({_TERMS_SQL}),
    partitions AS MATERIALIZED (
        SELECT p.collection_id, p.chunk_profile_id, p.embedding_model, p.chunks, p.tokens
        FROM knowledge_lexical_partition AS p
        CROSS JOIN LATERAL jsonb_populate_record(NULL::knowledge_chunk, jsonb_build_object(
            'collection_id', p.collection_id, 'chunk_profile_id', p.chunk_profile_id,
            'embedding_model', p.embedding_model)) AS c
        WHERE p.chunks > 0 AND ({{scope}}) IS NOT FALSE
    )
    SELECT t.lexeme,
        (SELECT coalesce(sum(x.chunks), 0) FROM knowledge_lexical_term AS x
         JOIN partitions AS p USING (collection_id, chunk_profile_id, embedding_model)
         WHERE x.lexeme = t.lexeme AND x.chunks > 0),
        (SELECT coalesce(sum(p.chunks), 0) FROM partitions AS p),
        (SELECT coalesce(sum(p.tokens), 0) FROM partitions AS p),
        (SELECT coalesce(sum(a.chunks), 0) FROM knowledge_lexical_partition AS a WHERE a.chunks > 0),
        ({MODEL_COUNTS_SQL})
    FROM terms AS t
    ORDER BY t.first_position, t.lexeme
"""


def _scope_statistics(cursor, text: str, scope_sql: str, scope_params: list) -> ScopeStatistics:
    cursor.execute(
        _STATISTICS_SQL.format(scope=scope_sql),
        [text, MAX_LOOKUP_TERMS, *scope_params],
    )
    rows = cursor.fetchall()
    if not rows or not rows[0][2]:
        return ScopeStatistics(chunks=0, avg_length=0.0, df={}, table_chunks=int(rows[0][4]) if rows else 0)
    chunks, tokens, table = int(rows[0][2]), int(rows[0][3]), int(rows[0][4])
    return ScopeStatistics(
        chunks=chunks,
        avg_length=tokens / chunks,
        df={row[0]: int(row[1]) for row in rows},
        table_chunks=table,
        models=model_counts(rows[0][5]),
    )


def model_counts(counts: str | dict | None) -> dict[str, tuple[int, int]]:
    """MODEL_COUNTS_SQL's value: the models with chunks in scope, (in scope, in the table) each."""
    if isinstance(counts, str):  # Django reads jsonb as text (its JSONField parses it)
        counts = json.loads(counts)
    return {model: (int(n), int(total)) for model, (n, total) in (counts or {}).items() if int(n) > 0}


def scope_statistics(*, query: str, scope_sql: str, scope_params: list) -> ScopeStatistics:
    """The query's term statistics over the scope, for callers that search and weigh with one lookup."""
    text = sanitise_query(query)
    if not text:
        return ScopeStatistics(chunks=0, avg_length=0.0, df={})
    with planned_once_cursor() as cursor:
        return _scope_statistics(cursor, text, scope_sql, list(scope_params))


def idf(*, df: int, chunks: int) -> float:
    """BM25's IDF in the non-negative form Lucene uses."""
    return math.log(1 + (chunks - df + 0.5) / (df + 0.5))


def term_weights(stats: ScopeStatistics) -> dict[str, float]:
    """IDF of the rarest MAX_TERMS query terms present in the scope, rarest first.

    The cap drops the commonest words of a long query: they weigh least in
    BM25 and cost most to look up.
    """
    present = [(df, i, lexeme) for i, (lexeme, df) in enumerate(stats.df.items()) if df > 0]
    return {lexeme: idf(df=df, chunks=stats.chunks) for df, _, lexeme in sorted(present)[:MAX_TERMS]}


def _candidate_queries(weights: dict[str, float], stats: ScopeStatistics, limit: int) -> list[str]:
    """Plain OR when its matches are affordable (exact BM25), else the IDF-mass
    threshold first, a lower threshold if that does not fill ``limit``, and plain
    OR only if neither does.

    The lower threshold keeps a retry bounded: when the words of a question rarely
    occur together (a rare term and common ones), the first threshold can match a
    few dozen chunks, and plain OR would then fetch (and cap at MAX_CANDIDATES) most
    of the table, which costs ~10x a threshold query and scores arbitrary rows.
    """
    any_term = tsquery_any(list(weights))
    absent = math.prod(1 - stats.df[t] / stats.chunks for t in weights)
    if stats.chunks * (1 - absent) <= OR_BUDGET:  # independence overestimates a union
        return [any_term]
    budget = max(CANDIDATE_BUDGET, CANDIDATES_PER_HIT * limit)
    queries = [threshold_tsquery(weights, stats, budget=b) for b in (budget, budget * RETRY_BUDGET_FACTOR)]
    return list(dict.fromkeys([*queries, any_term]))


def threshold_tsquery(weights: dict[str, float], stats: ScopeStatistics, *, budget: int) -> str:
    """A tsquery for "idf mass of the terms present >= t", t set from ``budget``."""
    ranked = sorted(weights, key=weights.get, reverse=True)
    terms = [t for t in ranked if stats.df[t] <= MAX_CANDIDATE_SHARE * stats.chunks][:CANDIDATE_TERMS]
    terms = terms if len(terms) >= 2 else ranked[:2]
    while True:
        units = _units([weights[t] for t in terms])
        shares = [stats.df[t] / stats.chunks for t in terms]
        need = _threshold(units, shares, budget / stats.chunks)
        query = _led_by_rare_terms(terms, units, need, [stats.df[t] for t in terms], stats.chunks)
        if _operands(query) <= MAX_QUERY_NODES or len(terms) == 1:
            return query
        terms = terms[:-1]


def _led_by_rare_terms(terms: list[str], units: list[int], need: int, df: list[int], chunks: int) -> str:
    """``_at_least(terms, units, need)`` restricted to chunks holding one of its rarest terms.

    The threshold expands as "the first term present is t_k, and the terms after it bring the
    rest": one alternative per leading term t_k, which the GIN scan finds by stepping through
    t_k's postings. Alternatives are kept rarest first while their leading terms' postings stay
    within the LEADING_POSTINGS budget; the others, led by common words, are dropped.
    """
    whole = _at_least(terms, units, need)
    startable = [k for k in range(len(terms)) if sum(units[k:]) >= need]
    if sum(df[k] for k in startable) * _operands(whole) <= LEADING_FREE_WORK:
        return whole  # a cheap scan whoever leads: keep every alternative
    allowed = max(LEADING_POSTINGS_MIN, LEADING_POSTINGS_SHARE * chunks)
    alternatives, postings = [], 0
    for k, term in enumerate(terms):
        rest = need - units[k]
        if rest > sum(units[k + 1 :]):
            break  # no chunk whose first present term comes this late reaches the threshold
        if alternatives and postings + df[k] > allowed:
            return " | ".join(alternatives)
        postings += df[k]
        tail = _at_least(terms[k + 1 :], units[k + 1 :], rest) if rest > 0 else ""
        alternatives.append(f"{quote_lexeme(term)} & ({tail})" if tail else quote_lexeme(term))
    return whole  # every alternative kept


def _operands(query: str) -> int:
    return query.count(" & ") + query.count(" | ") + 1  # lexemes hold no spaces


def _units(weights: list[float]) -> list[int]:
    top = max(weights)
    return [max(1, round(w / top * WEIGHT_STEPS)) for w in weights]


def _threshold(units: list[int], shares: list[float], target_share: float) -> int:
    """Smallest mass whose expected share of matching chunks is <= target (>= 1).

    Treats terms as independent: P(mass = s) by convolution over the terms,
    each present with probability df/N.
    """
    distribution = [1.0]
    for unit, share in zip(units, shares, strict=True):
        grown = [0.0] * (len(distribution) + unit)
        for mass, p in enumerate(distribution):
            grown[mass] += p * (1 - share)
            grown[mass + unit] += p * share
        distribution = grown
    tail = 0.0
    need = len(distribution) - 1
    for mass in range(len(distribution) - 1, 0, -1):
        tail += distribution[mass]
        if tail > target_share:
            break
        need = mass
    return need


def _at_least(terms: list[str], units: list[int], need: int) -> str:
    """tsquery text matching chunks whose present terms' units sum to >= need.

    Expands the threshold function term by term: either the term is present
    (and the rest must bring need - unit) or it is absent (the rest bring need).
    """
    suffix = [sum(units[i:]) for i in range(len(units) + 1)]
    memo: dict[tuple[int, int], str | None] = {}

    def build(i: int, need: int) -> str | None:
        if suffix[i] < need:
            return None
        if (i, need) not in memo:
            term = quote_lexeme(terms[i])
            rest = build(i + 1, need - units[i]) if need > units[i] else ""
            present = None if rest is None else (f"{term} & ({rest})" if rest else term)
            absent = build(i + 1, need)
            memo[i, need] = " | ".join(part for part in (present, absent) if part) or None
        return memo[i, need]

    return build(0, max(1, min(need, suffix[0]))) or tsquery_any(terms)


def quote_lexeme(lexeme: str) -> str:
    """A lexeme as a tsquery operand taken verbatim: quoted, quotes doubled, backslashes escaped."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_any(lexemes: list[str]) -> str:
    return " | ".join(quote_lexeme(lexeme) for lexeme in lexemes)


# Candidates come from knowledge_chunk_lexical (migrations 0015 and 0016): a narrow row per chunk
# with its vector inline, its length stored, and the chunk columns a scope names
# (collection_id, chunk_profile_id, document_id, embedding_model, metadata) under the chunk
# table's names. So the caller's scope -- the SQL the access rule compiled to -- runs on the copy
# as written, alias ``c``, in the same scan, instead of a primary-key lookup into the wide chunk
# table per candidate (a third of a search's time); a scope naming another column fails loudly.
# Each vector is cut down to the query's lexemes once (hence MATERIALIZED): setweight marks
# them 'A' (the column's are all 'D') and ts_filter keeps just those, so only they are unnested
# -- in the select list, where the set-returning function streams instead of filling a
# tuplestore per row. Each occurrence finds its IDF by a hash join on the lexeme (not a search
# of the lexeme array per row), and the arithmetic is float8 throughout: the parameters would
# otherwise arrive as numeric literals and make every row's BM25 numeric arithmetic (-10% of
# the search). Which lexemes a chunk holds comes back as a bitmask (bit i: lexemes[i]): an
# array_agg keeps a memory context per group, which for ~1,500 candidates pushed the aggregate
# past work_mem and onto disk. Scores are rounded to 1e-9 so chunks with equal statistics tie
# exactly and fall back to id order.
_SCORE_SQL = """
    WITH candidates AS MATERIALIZED (
        SELECT c.chunk_id AS id, greatest(c.length, 1)::float8 AS length,
            ts_filter(setweight(c.search_vector, 'A', %(lexemes)s::text[]), '{{a}}') AS matched
        FROM knowledge_chunk_lexical AS c
        WHERE c.search_vector @@ %(candidates)s::tsquery AND ({scope})
        LIMIT %(max_candidates)s
    ),
    occurrences AS (
        SELECT m.id, m.length, unnest(m.matched) AS u FROM candidates AS m
    ),
    weights AS (
        SELECT * FROM unnest(%(lexemes)s::text[], %(idf)s::float8[]) WITH ORDINALITY AS w(lexeme, idf, bit)
    )
    SELECT o.id, round(sum(
        w.idf * f.tf * (%(k1)s::float8 + 1)
        / (f.tf + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * o.length / %(avg_length)s::float8))
    ) * 1e9) / 1e9 AS score, bit_or(1::bigint << (w.bit - 1)::integer) AS held
    FROM occurrences AS o JOIN weights AS w ON w.lexeme = (o.u).lexeme
    CROSS JOIN LATERAL (SELECT cardinality((o.u).positions)::float8 AS tf) AS f
    GROUP BY o.id
    ORDER BY score DESC, o.id
    LIMIT %(limit)s
"""


def _score(
    cursor,
    candidate_query: str,
    weights: dict[str, float],
    stats: ScopeStatistics,
    scope_sql: str,
    scope_params: list,
    limit: int,
) -> list[tuple[int, float, frozenset[str]]]:
    lexemes = list(weights)
    named = {
        "candidates": candidate_query,
        "max_candidates": MAX_CANDIDATES,
        "lexemes": lexemes,
        "idf": [weights[t] for t in lexemes],
        "k1": K1,
        "b": B,
        "avg_length": stats.avg_length,
        "limit": limit,
    }
    sql, params = _bind(_SCORE_SQL.format(scope=scope_sql), named, scope_params)
    cursor.execute(sql, params)
    return [(int(id_), float(score), _lexemes_in(held, lexemes)) for id_, score, held in cursor.fetchall()]


def _lexemes_in(held: int, lexemes: list[str]) -> frozenset[str]:
    """The lexemes whose bits (bit i for lexemes[i]) are set in ``held``."""
    return frozenset(lexeme for i, lexeme in enumerate(lexemes) if held >> i & 1)


def _bind(sql: str, named: dict, scope_params: list) -> tuple[str, list]:
    """Positional parameters for SQL mixing %(name)s placeholders with the scope's %s ones."""
    params: list = []
    scope = iter(scope_params)

    def placeholder(match: re.Match) -> str:
        if match.group(0) == "%%":  # a literal percent sign stays escaped
            return "%%"
        params.append(named[match.group(1)] if match.group(1) else next(scope))
        return "%s"

    return re.sub(r"%%|%\((\w+)\)s|%s", placeholder, sql), params


def question_term_weights(
    *, query: str, scope_sql: str, scope_params: list, stats: ScopeStatistics | None = None
) -> dict[str, float]:
    """IDF over the scope of each of the question's terms, a term found nowhere weighing most.

    Japanese bigrams holding hiragana are left out when the question has other terms: they are
    its grammar ("ですか", the seam "ンの"), which the English terms lose as stop words, and the
    ones found nowhere would otherwise outweigh the words the question is about.
    """
    if stats is None:
        stats = scope_statistics(query=query, scope_sql=scope_sql, scope_params=scope_params)
    if not stats.chunks:
        return {}
    weights = {lexeme: idf(df=df, chunks=stats.chunks) for lexeme, df in stats.df.items()}
    content = {lexeme: w for lexeme, w in weights.items() if not is_grammatical_bigram(lexeme)}
    return content or weights


def chunk_lexemes(*, chunk_id: int, lexemes: list[str]) -> set[str]:
    """Which of ``lexemes`` occur in the chunk's full-text vector."""
    if not lexemes:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme FROM knowledge_chunk_lexical AS c"
            " CROSS JOIN LATERAL unnest(c.search_vector) AS u WHERE c.chunk_id = %s AND u.lexeme = ANY(%s)",
            [chunk_id, lexemes],
        )
        return {row[0] for row in cursor.fetchall()}
