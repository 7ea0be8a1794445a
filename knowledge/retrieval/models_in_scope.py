"""The embedding models a search's scope holds, and the question's vector under each.

Collections choose their model (knowledge.clients.embedding_registry), so one scope may
hold chunks of several: the question is embedded once per model, each model's chunks are searched
with its own vector (retrieval/service.py), and a chunk's cosine is always to the vector of its
own model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

from knowledge.clients.embedding import embed_question
from knowledge.clients.embedding_endpoints import EndpointError
from knowledge.clients.embedding_registry import EmbeddingModel, embedding_model_info
from knowledge.retrieval import dense, lexical
from knowledge.retrieval.answerability import embedding_reads
from knowledge.retrieval.scope import Scope

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unavailable:
    """No vector: the model's endpoint failed for this question (its chunks are then found by
    their words alone, and the retrieval's stats say why)."""

    reason: str


# The embedding models each scope held at its last search, so the next question's embedding
# starts with the right models before its statistics say which they are (scopes are compiled
# once and cached, but a collection's model can change under them).
_models_seen: dict[Scope, tuple[str, ...]] = {}
MODELS_SEEN_KEPT = 1024


def models_expected(scope: Scope) -> tuple[str, ...]:
    return _models_seen.get(scope) or (settings.KNOWLEDGE_EMBEDDING_MODEL,)


def model_sizes(scope: Scope, terms: lexical.ScopeStatistics) -> dict[str, dense.ScopeSize | None]:
    """Each embedding model in scope with its dense search's size (None: looked up by the search)."""
    if terms.models:
        sizes = {m: dense.ScopeSize(rows=n, table=total) for m, (n, total) in terms.models.items()}
    else:  # no statistics (a question without searchable words, or nothing in scope)
        sizes = dense.scope_models(scope)
    if len(_models_seen) >= MODELS_SEEN_KEPT:
        _models_seen.clear()
    _models_seen[scope] = tuple(sizes) or models_expected(scope)
    return sizes


def question_models(models) -> dict[str, EmbeddingModel]:
    """The registry's entries for ``models``, looked up here (an endpoint's are database rows), so
    that ``question_vectors`` can run on a thread that holds no database connection."""
    return {model: embedding_model_info(model) for model in models}


def question_vectors(question: str, models: dict[str, EmbeddingModel]) -> dict:
    """The question's vector under each model (``question_models``); ``Unavailable`` for an
    endpoint model whose endpoint failed (a bundled model's failure is a fault and propagates)."""
    vectors = {}
    for name, model in models.items():
        try:
            vectors[name] = embed_question(question, model)
        except EndpointError as exc:
            logger.warning("Searching without %s's vectors: %s", name, exc)
            vectors[name] = Unavailable(str(exc))
    return vectors


def available(vectors: dict) -> dict:
    """The vectors there are (without the models whose endpoint failed)."""
    return {model: vector for model, vector in vectors.items() if not isinstance(vector, Unavailable)}


def unavailable(vectors: dict) -> dict[str, str]:
    """Why each model without a vector has none."""
    return {model: v.reason for model, v in vectors.items() if isinstance(v, Unavailable)}


def distance_sql(vectors: dict) -> tuple[str, list]:
    """Each chunk's cosine distance to the question's vector under the chunk's own model."""
    vectors = available(vectors)
    if not vectors:  # as far as a cosine distance goes: no vector to compare with
        return "2.0::float8", []
    if len(vectors) == 1:
        return "c.embedding <=> %s::vector", [dense.vector_literal(next(iter(vectors.values())))]
    cases, params = [], []
    for model, vector in vectors.items():
        cases.append("WHEN %s THEN c.embedding <=> %s::vector")
        params += [model, dense.vector_literal(vector)]
    # A chunk of another model (its collection switched since the statistics were read) is as far
    # as a cosine distance goes, rather than compared with a vector of another space.
    return f"CASE c.embedding_model {' '.join(cases)} ELSE 2.0 END", params


def embedding_reads_any(question: str, models: tuple[str, ...]) -> bool:
    """Whether a model in scope reads the question (with several models, the dense ranking that
    can read it still ranks; the others' hits come in by rank alone)."""
    return any(embedding_reads(question, embedding_model=model) for model in models)
