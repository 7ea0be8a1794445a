"""Embedding models the operator serves: ``POST {base}/embeddings`` in OpenAI's wire format.

Ollama, vLLM, Hugging Face TEI, Infinity, LocalAI, OpenAI and Azure OpenAI all
answer it, so one client (the ``openai`` package's, which retries 429s, 5xx
and broken connections with exponential backoff, honouring Retry-After) serves
every one. What comes back is checked before anything is stored: one vector per
text, each of the registered dimension and finite; vectors are scaled to unit
length, as the bundled models' are, so cosines and the HNSW index treat every
model alike. Any failure is an ``EndpointError`` whose message names the
endpoint and the reason, never the key.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from knowledge.models import EmbeddingEndpoint
from knowledge.text.token_counts import llm_tokens_cut

# A question is asked once per retrieval: it is not retried while a user waits (the search falls
# back to the lexical ranking instead and says so); ingestion retries as the endpoint says.
QUESTION_RETRIES = 0
# The discovery call of a registration: one short text.
DISCOVERY_TEXT = "dimension probe"
# Repeated questions skip the endpoint (per process, as for the bundled models).
QUERY_CACHE_SIZE = 1024
# Whatever the endpoint's own limit, a question's wait is bounded.
QUESTION_TIMEOUT_SECONDS = 10.0


class EndpointError(Exception):
    """The endpoint could not embed: unreachable, refused, too slow, or answered something unusable."""


@dataclass(frozen=True)
class EndpointSpec:
    """One registered endpoint as a search or an ingestion uses it (the row's values at one moment)."""

    name: str
    base_url: str
    model: str
    api_key: str
    dimensions: int | None
    batch_size: int
    query_prefix: str
    passage_prefix: str
    max_input_tokens: int
    timeout_seconds: float
    max_retries: int
    multilingual: bool

    @classmethod
    def of(cls, row: EmbeddingEndpoint) -> EndpointSpec:
        return cls(
            name=row.name,
            base_url=row.base_url.strip().rstrip("/"),
            model=row.model.strip(),
            api_key=row.api_key,
            dimensions=row.dimensions,
            batch_size=row.batch_size,
            query_prefix=row.query_prefix,
            passage_prefix=row.passage_prefix,
            max_input_tokens=row.max_input_tokens,
            timeout_seconds=row.timeout_seconds,
            max_retries=row.max_retries,
            multilingual=row.multilingual,
        )

    def __repr__(self) -> str:  # never the key, wherever a spec is logged or shown
        return f"EndpointSpec({self.name!r}, {self.model!r} at {self.base_url!r})"


def endpoint_spec(name: str) -> EndpointSpec | None:
    """The registered endpoint called ``name``, read now (an edit takes effect on the next call)."""
    row = EmbeddingEndpoint.objects.filter(name=name).first()
    return EndpointSpec.of(row) if row else None


def endpoint_passages(
    spec: EndpointSpec, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
) -> np.ndarray:
    """Unit vectors for passages, ``spec.batch_size`` texts a request, retried as configured."""
    client = _client(spec.base_url, spec.api_key, spec.timeout_seconds, spec.max_retries)
    result = np.zeros((len(texts), spec.dimensions or 0), dtype=np.float32)
    for start in range(0, len(texts), spec.batch_size):
        batch = [spec.passage_prefix + _cut(text, spec) for text in texts[start : start + spec.batch_size]]
        vectors = _embedded(client, spec, batch)
        if result.shape[1] != vectors.shape[1]:
            result = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        result[start : start + len(batch)] = vectors
        if on_batch:
            on_batch(start + len(batch))
    return result


def endpoint_query(spec: EndpointSpec, text: str) -> np.ndarray:
    """The question's unit vector (read-only, cached per process), without retries."""
    key = (spec.base_url, spec.model, spec.query_prefix, spec.dimensions, text)
    with _queries_lock:
        cached = _queries.get(key)
        if cached is not None:
            _queries.move_to_end(key)
            return cached
    timeout = min(spec.timeout_seconds, QUESTION_TIMEOUT_SECONDS)
    client = _client(spec.base_url, spec.api_key, timeout, QUESTION_RETRIES)
    vector = _embedded(client, spec, [spec.query_prefix + _cut(text, spec)])[0]
    vector.flags.writeable = False
    with _queries_lock:
        _queries[key] = vector
        while len(_queries) > QUERY_CACHE_SIZE:
            _queries.popitem(last=False)
    return vector


def endpoint_questions(spec: EndpointSpec, texts: Sequence[str]) -> np.ndarray:
    """Several texts read as questions (with the query prefix), in one request, without retries."""
    timeout = min(spec.timeout_seconds, QUESTION_TIMEOUT_SECONDS)
    client = _client(spec.base_url, spec.api_key, timeout, QUESTION_RETRIES)
    return _embedded(client, spec, [spec.query_prefix + _cut(text, spec) for text in texts])


_queries: OrderedDict[tuple, np.ndarray] = OrderedDict()
_queries_lock = threading.Lock()


def discover_dimensions(*, base_url: str, model: str, api_key: str, timeout_seconds: float) -> int:
    """The endpoint's dimension, from one call (EndpointError when it cannot be had)."""
    spec = EndpointSpec(
        name=model,
        base_url=base_url.strip().rstrip("/"),
        model=model.strip(),
        api_key=api_key,
        dimensions=None,
        batch_size=1,
        query_prefix="",
        passage_prefix="",
        max_input_tokens=64,
        timeout_seconds=timeout_seconds,
        max_retries=0,
        multilingual=False,
    )
    client = _client(spec.base_url, api_key, timeout_seconds, 0)
    return int(_embedded(client, spec, [DISCOVERY_TEXT]).shape[1])


def _embedded(client, spec: EndpointSpec, texts: list[str]) -> np.ndarray:
    """One request's vectors, checked and scaled to unit length."""
    import openai

    try:
        response = client.embeddings.create(model=spec.model, input=texts, encoding_format="float")
        rows = sorted(response.data, key=lambda item: item.index)
        vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
    except openai.APIStatusError as exc:
        raise EndpointError(f"{_where(spec)} answered HTTP {exc.status_code}: {_message(exc)}") from None
    except openai.APITimeoutError:
        raise EndpointError(f"{_where(spec)} did not answer within {client.timeout.read} s") from None
    except openai.APIConnectionError as exc:
        raise EndpointError(f"{_where(spec)} is unreachable: {exc.__cause__ or exc}") from None
    except (openai.APIError, TypeError, ValueError, AttributeError) as exc:
        raise EndpointError(f"{_where(spec)} answered something that is not embeddings: {exc}") from None
    return _checked(vectors, spec, expected=len(texts))


def _checked(vectors: np.ndarray, spec: EndpointSpec, *, expected: int) -> np.ndarray:
    if vectors.ndim != 2 or vectors.shape[0] != expected:
        raise EndpointError(f"{_where(spec)} returned {vectors.shape[0]} vectors for {expected} texts")
    if spec.dimensions is not None and vectors.shape[1] != spec.dimensions:
        raise EndpointError(
            f"{_where(spec)} returned vectors of {vectors.shape[1]} dimensions; "
            f"{spec.name} is registered with {spec.dimensions}"
        )
    if not np.isfinite(vectors).all():
        raise EndpointError(f"{_where(spec)} returned a vector with NaN or infinite numbers")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EndpointError(f"{_where(spec)} returned a vector of zeros")
    return vectors / norms


def _cut(text: str, spec: EndpointSpec) -> str:
    """The text cut to the model's input limit, counted in cl100k tokens (the endpoint's own
    tokenizer is unknown; cl100k's pieces are about as long as BERT's and longer than
    SentencePiece's, so the cut leaves room)."""
    return llm_tokens_cut(text, spec.max_input_tokens)


def _where(spec: EndpointSpec) -> str:
    return f"the embedding endpoint {spec.name} ({spec.base_url})"


def _message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:300]
    return str(exc)[:300]


_clients: dict[tuple, object] = {}
_clients_lock = threading.Lock()


def _client(base_url: str, api_key: str, timeout: float, retries: int):
    """One ``openai`` client (and its connection pool) per endpoint and settings, per process."""
    import openai

    key = (base_url, api_key, timeout, retries)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = openai.OpenAI(
                base_url=base_url,
                # Endpoints without authentication (Ollama, TEI) still need a non-empty key for the client.
                api_key=api_key or "no-key",
                timeout=openai.Timeout(timeout, connect=min(timeout, 10.0)),
                max_retries=retries,
            )
    return client
