"""How strongly a typical answer matches its question in a scope: the yardstick for "far weaker".

A cosine means different things in different collections: short API records
and spreadsheet rows match questions less closely than encyclopedic prose does.
So the verdict also compares the best passage found with what a typical
answer in the searched collections scores.

"Typical" is measured on the collections themselves, without any question
asked before: a sample of SAMPLE_CHUNKS chunks (a fixed pseudo-random choice,
so the figure is reproducible), each questioned by its own first sentence, as
a user quoting a fact they half remember would; the cosine between that
sentence and its chunk is what an answer scores for a question in the
collection's own words. The median of the sample is robust to the odd title
block or table. Computed once per scope and chunk count in this process (a
sample of 32 sentences embeds in well under a second) and recomputed when
documents are added or removed.
"""

from __future__ import annotations

import json
import logging
import statistics
from dataclasses import replace
from functools import lru_cache

import numpy as np
from django.conf import settings
from django.db import connection

from knowledge.clients.embedding import embed_questions
from knowledge.clients.embedding_endpoints import EndpointError
from knowledge.clients.embedding_registry import embedding_model_info
from knowledge.retrieval.scope import Scope
from knowledge.text.sentences import split_sentences

logger = logging.getLogger(__name__)

SAMPLE_CHUNKS = 32
# Fewer quotable chunks than this: no yardstick (the verdict then ignores it).
MIN_SAMPLE = 5

_SAMPLE_SQL = """
    SELECT c.content, c.embedding::text
    FROM knowledge_chunk AS c
    WHERE {scope}
    ORDER BY md5(c.id::text)
    LIMIT %s
"""


def typical_similarity(scope: Scope, *, chunks: int) -> float | None:
    """The median cosine between a sampled chunk's first sentence and the chunk (None: too few).

    ``chunks`` is the scope's chunk count (from the search's statistics): part of the cache key,
    so a scope whose documents changed is measured again (a narrowed search's count differs, and
    is measured once per narrowing at worst).
    """
    # A search narrowed to some documents (multi-step retrieval) is judged by its collections' yardstick.
    try:
        return _typical_cached(replace(scope, document_ids=None), chunks)
    except EndpointError as exc:  # not cached: the verdict goes without the yardstick this time
        logger.warning("No typical similarity for %s: %s", scope.embedding_model, exc)
        return None


@lru_cache(maxsize=256)
def _typical_cached(scope: Scope, chunks: int) -> float | None:
    with connection.cursor() as cursor:
        cursor.execute(_SAMPLE_SQL.format(scope=scope.sql()), [*scope.params(), SAMPLE_CHUNKS * 2])
        rows = cursor.fetchall()
    return _median_self_match(rows, scope.embedding_model)


def _questions_embedded(sentences: list[str], model: str | None) -> np.ndarray:
    """The sentences as questions, in the chunks' model (e5 reads a question with its own prefix,
    an endpoint's model with the query prefix registered for it)."""
    return embed_questions(sentences, embedding_model_info(model or settings.KNOWLEDGE_EMBEDDING_MODEL))


def _median_self_match(rows: list[tuple], model: str | None = None) -> float | None:
    pairs = []
    for content, vector in rows:
        sentences = split_sentences(content or "")
        if sentences and vector:
            pairs.append((sentences[0], np.array(json.loads(vector), dtype=np.float32)))
        if len(pairs) == SAMPLE_CHUNKS:
            break
    if len(pairs) < MIN_SAMPLE:
        return None
    questions = _questions_embedded([sentence for sentence, _ in pairs], model)
    chunks = np.array([vector for _, vector in pairs], dtype=np.float32)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    return float(statistics.median((questions * chunks).sum(axis=1)))
