"""Registering the operator's embedding and rerank endpoints (docs/operator-guide/models.md).

A registration asks the endpoint for one vector to learn its dimension, then
fixes it: the collection's vectors and the HNSW index made here depend on it.
Each endpoint model's index is on the embedding column cast to its dimension and
holds only its chunks (as for the bundled models, migration 0039), so a search
over one model walks a graph of that model's vectors; above pgvector's 2,000
dimensions for ``vector`` the graph is on half-precision ``halfvec`` (up to 4,000).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from psycopg import sql

from config.base.errors import KnowledgeError
from knowledge.clients.embedding_endpoints import EndpointError, discover_dimensions
from knowledge.clients.embedding_registry import EMBEDDING_MODELS
from knowledge.clients.rerank_endpoints import RerankError, RerankSpec, rerank_scores
from knowledge.models import Chunk, Collection, EmbeddingEndpoint, RerankEndpoint
from knowledge.models.documents import HNSW_EF_CONSTRUCTION, HNSW_M
from knowledge.models.releases import Release
from knowledge.retrieval.dense import HNSW_VECTOR_LIMIT

# pgvector's HNSW limit for halfvec.
HNSW_HALFVEC_LIMIT = 4000


def endpoint_index_name(endpoint: EmbeddingEndpoint) -> str:
    return f"chunk_embedding_hnsw_ep{endpoint.pk}"


def embedding_endpoint_save(endpoint: EmbeddingEndpoint) -> EmbeddingEndpoint:
    """Check ``endpoint`` (new or edited) with one call, store it and make its index.
    KnowledgeError says what is wrong; nothing is stored then."""
    embedding_endpoint_checked(endpoint)
    return embedding_endpoint_store(endpoint)


def embedding_endpoint_checked(endpoint: EmbeddingEndpoint) -> EmbeddingEndpoint:
    """Validate ``endpoint`` and learn (new) or check (edited) its dimension with one call; the
    dimension is set on it, nothing is stored. KnowledgeError says what is wrong.

    The call happens outside any transaction, so no database lock waits on the endpoint.
    """
    _check_fields(endpoint)
    previous = EmbeddingEndpoint.objects.filter(pk=endpoint.pk).first() if endpoint.pk else None
    if previous and previous.name != endpoint.name and endpoint_in_use(previous.name):
        raise KnowledgeError(f"{previous.name} embeds collections' chunks: its name cannot change")
    try:
        found = discover_dimensions(
            base_url=endpoint.base_url,
            model=endpoint.model,
            api_key=endpoint.api_key,
            timeout_seconds=endpoint.timeout_seconds,
        )
    except EndpointError as exc:
        raise KnowledgeError(f"the endpoint could not be used: {exc}") from None
    if previous and previous.dimensions and found != previous.dimensions:
        raise KnowledgeError(
            f"the endpoint now returns {found} dimensions; {previous.name} was registered with "
            f"{previous.dimensions}. Register the new model under a new name instead."
        )
    if found > HNSW_HALFVEC_LIMIT:
        raise KnowledgeError(
            f"the model's vectors have {found} dimensions; at most {HNSW_HALFVEC_LIMIT} are indexed"
        )
    endpoint.dimensions = found
    return endpoint


def embedding_endpoint_store(endpoint: EmbeddingEndpoint) -> EmbeddingEndpoint:
    """Store a checked endpoint (``embedding_endpoint_checked``) and make its index."""
    if not endpoint.dimensions:
        raise KnowledgeError("the endpoint's dimension is not known: check it first")
    endpoint.save()
    # Inside a transaction (the admin's save) the index waits for the commit, to be built
    # concurrently: a plain CREATE INDEX would hold the chunk table's writes for the whole scan.
    transaction.on_commit(lambda: endpoint_index_ensure(endpoint))
    return endpoint


def embedding_endpoint_delete(endpoint: EmbeddingEndpoint) -> None:
    """Forget an endpoint no collection, release or chunk uses (KnowledgeError if one does)."""
    if endpoint_in_use(endpoint.name):
        raise KnowledgeError(
            f"{endpoint.name} still embeds chunks of a collection or release: "
            "move those to another model first"
        )
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(endpoint_index_name(endpoint)))
        )
    endpoint.delete()


def endpoint_index_ensure(endpoint: EmbeddingEndpoint) -> None:
    """The endpoint model's partial HNSW index (built concurrently outside a transaction, so
    ingestion into other collections goes on while it is built)."""
    kind = "halfvec" if endpoint.dimensions > HNSW_VECTOR_LIMIT else "vector"
    statement = sql.SQL(
        "CREATE INDEX {concurrently} IF NOT EXISTS {name} ON knowledge_chunk USING hnsw "
        "((embedding::{kind}({dimensions})) {opclass}) WITH (m = {m}, ef_construction = {ef}) "
        "WHERE embedding_model = {model}"
    ).format(
        concurrently=sql.SQL("" if connection.in_atomic_block else "CONCURRENTLY"),
        name=sql.Identifier(endpoint_index_name(endpoint)),
        kind=sql.SQL(kind),
        dimensions=sql.Literal(int(endpoint.dimensions)),
        opclass=sql.SQL(f"{kind}_cosine_ops"),
        m=sql.Literal(HNSW_M),
        ef=sql.Literal(HNSW_EF_CONSTRUCTION),
        model=sql.Literal(endpoint.name),
    )
    with connection.cursor() as cursor:
        cursor.execute(statement.as_string(cursor.connection))


def _fields_valid(endpoint, exclude=()) -> None:
    """The fields' own limits, a name no other endpoint has, an http(s) URL; KnowledgeError if not."""
    try:
        endpoint.full_clean(exclude=list(exclude))
    except ValidationError as exc:
        problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
        raise KnowledgeError(problems) from None
    if not endpoint.base_url.strip().startswith(("http://", "https://")):
        raise KnowledgeError("the endpoint must be an http:// or https:// URL")


def _check_fields(endpoint: EmbeddingEndpoint) -> None:
    _fields_valid(endpoint, exclude=["dimensions"])
    if endpoint.name in EMBEDDING_MODELS:
        raise KnowledgeError(f"{endpoint.name} is a bundled model's name; choose another")
    if not endpoint.model.strip():
        raise KnowledgeError("the model's name at the endpoint is empty")


def endpoint_in_use(name: str) -> bool:
    return (
        Collection.objects.filter(embedding_model=name).exists()
        or Collection.objects.filter(pending_embedding_model=name).exists()
        or Release.objects.filter(embedding_model=name).exists()
        or Chunk.objects.filter(embedding_model=name).exists()
    )


# What a registration asks a reranker, to see it answers in the expected shape.
RERANK_PROBE = ("Which passage is about the sky?", ["The sky is blue.", "Grass is green."])


def rerank_endpoint_save(endpoint: RerankEndpoint) -> RerankEndpoint:
    """Check ``endpoint`` with one rerank call and store it (KnowledgeError with the reason and
    nothing stored when it does not answer as a reranker)."""
    rerank_endpoint_checked(endpoint)
    endpoint.save()
    return endpoint


def rerank_endpoint_checked(endpoint: RerankEndpoint) -> RerankEndpoint:
    """Validate ``endpoint`` and ask it one question; nothing is stored."""
    _fields_valid(endpoint)
    query, documents = RERANK_PROBE
    try:
        rerank_scores(RerankSpec.of(endpoint), query, documents)
    except RerankError as exc:
        raise KnowledgeError(f"the endpoint could not be used: {exc}") from None
    return endpoint
