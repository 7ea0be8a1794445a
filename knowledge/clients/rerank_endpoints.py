"""Rerankers the operator serves: ``POST {base}/rerank`` in the common shape.

Cohere, Jina, vLLM, Infinity and Hugging Face TEI's OpenAI-style route take
``{"model", "query", "documents": [...], "top_n"}`` and answer ``{"results": [{"index",
"relevance_score"}, ...]}``. The answer is checked (every index once, finite
scores) before it reorders anything; any failure is a ``RerankError`` naming the
endpoint and the reason, never the key. A question waits for this call, so it is
made once, within the endpoint's timeout, with no retry.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import requests

from knowledge.models import RerankEndpoint


class RerankError(Exception):
    """The reranker could not score: unreachable, refused, too slow, or answered something unusable."""


@dataclass(frozen=True)
class RerankSpec:
    name: str
    base_url: str
    model: str
    api_key: str
    timeout_seconds: float

    @classmethod
    def of(cls, row: RerankEndpoint) -> RerankSpec:
        return cls(
            row.name, row.base_url.strip().rstrip("/"), row.model.strip(), row.api_key, row.timeout_seconds
        )

    def __repr__(self) -> str:  # never the key
        return f"RerankSpec({self.name!r} at {self.base_url!r})"


def rerank_scores(spec: RerankSpec, query: str, documents: list[str]) -> list[float]:
    """One relevance score per document, in the documents' order (RerankError when there are none)."""
    body = {"query": query, "documents": documents, "top_n": len(documents), "return_documents": False}
    if spec.model:
        body["model"] = spec.model
    headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
    try:
        response = _session().post(
            f"{spec.base_url}/rerank", json=body, headers=headers, timeout=spec.timeout_seconds
        )
    except requests.Timeout:
        raise RerankError(f"{_where(spec)} did not answer within {spec.timeout_seconds:g} s") from None
    except requests.RequestException as exc:
        raise RerankError(f"{_where(spec)} is unreachable: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise RerankError(f"{_where(spec)} answered HTTP {response.status_code}: {_message(response)}")
    return _scores(spec, response, len(documents))


def _scores(spec: RerankSpec, response, count: int) -> list[float]:
    try:
        results = response.json()["results"]
        pairs = [(int(row["index"]), float(row["relevance_score"])) for row in results]
    except (ValueError, KeyError, TypeError) as exc:
        raise RerankError(f"{_where(spec)} answered something that is not rerank results: {exc!r}") from None
    scores: dict[int, float] = {}
    for index, score in pairs:
        if not 0 <= index < count or index in scores or not math.isfinite(score):
            raise RerankError(f"{_where(spec)} answered an unusable result (index {index}, score {score})")
        scores[index] = score
    if len(scores) != count:
        raise RerankError(f"{_where(spec)} scored {len(scores)} of {count} passages")
    return [scores[i] for i in range(count)]


def _where(spec: RerankSpec) -> str:
    return f"the rerank endpoint {spec.name} ({spec.base_url})"


def _message(response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or body)[:300]


_local = threading.local()


def _session() -> requests.Session:
    """One connection pool per thread (a Session is not documented as thread-safe)."""
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
    return session
