"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Real HTTP, real wire format: the application's real ``openai`` client talks to
it through OPENAI_BASE_URL, so nothing in the client is patched. It answers
``POST /v1/chat/completions`` streamed (SSE chunks, a final usage chunk when
``stream_options.include_usage``) or not, and can be scripted per request:
answer text, reported usage (or none), an error status, a delay before the
response, a pause between streamed chunks, or a stream cut off half-way.
Every request body is recorded for assertions.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

import pytest

from tests.loopback import LoopbackServer


@dataclass
class Reply:
    text: str = "The documents say so [Source 1]."
    status: int = 200
    error_message: str = "scripted failure"
    delay: float = 0.0  # seconds before anything is sent
    chunk_delay: float = 0.0  # seconds between streamed chunks
    prompt_tokens: int | None = 321
    completion_tokens: int | None = 47
    cut_after_chunks: int | None = None  # close the connection mid-stream


@dataclass
class Request:
    path: str
    headers: dict
    body: dict

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", [])

    @property
    def system(self) -> str:
        return next((m["content"] for m in self.messages if m["role"] == "system"), "")

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))


class OpenAIServer(LoopbackServer):
    def __init__(self) -> None:
        super().__init__(Reply())
        self.responder: Callable[[Request], Reply] | None = None
        self.on_request: Callable[[Request], None] | None = None

    def reply_for(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self.responder is not None:
                return self.responder(request)
            return self.replies.popleft() if self.replies else self.default


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.0"  # one request per connection; a stream ends when it closes

    def log_message(self, format, *args):  # keep test output clean
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        if not re.search(r"/chat/completions/?$", self.path):
            return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
        if self.owner.on_request is not None:
            self.owner.on_request(request)
        reply = self.owner.reply_for(request)
        try:
            if reply.delay and not self.owner.pause(reply.delay):
                return
            if reply.status != 200:
                return self._error(reply)
            if request.streamed:
                return self._stream(request, reply)
            return self._json(200, _completion(request, reply))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to do

    def _error(self, reply: Reply) -> None:
        body = {"error": {"message": reply.error_message, "type": "server_error", "code": reply.status}}
        # retry-after-ms keeps the client's retry back-off short in tests.
        self._json(reply.status, body, extra_headers={"retry-after-ms": "20"})

    def _json(self, status: int, body: dict, extra_headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, request: Request, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        chunks = [_chunk(request, {"role": "assistant", "content": ""})]
        chunks += [_chunk(request, {"content": piece}) for piece in pieces(reply.text)]
        chunks.append(_chunk(request, {}, finish_reason="stop"))
        include_usage = (request.body.get("stream_options") or {}).get("include_usage")
        if include_usage and reply.prompt_tokens is not None:
            chunks.append({**_chunk(request, {}), "choices": [], "usage": _usage(reply)})
        for number, chunk in enumerate(chunks):
            if reply.cut_after_chunks is not None and number >= reply.cut_after_chunks:
                self.wfile.flush()
                self.connection.shutdown(2)  # the stream dies half-way
                return
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            if reply.chunk_delay and not self.owner.pause(reply.chunk_delay):
                return
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


OpenAIServer.handler = _Handler


def pieces(text: str) -> list[str]:
    """The text in small pieces (two words each), as a model streams it."""
    words = re.findall(r"\S+\s*", text)
    return ["".join(words[i : i + 2]) for i in range(0, len(words), 2)] or [text]


def _usage(reply: Reply) -> dict:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + (reply.completion_tokens or 0),
    }


def _chunk(request: Request, delta: dict, finish_reason: str | None = None) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.body.get("model", ""),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _completion(request: Request, reply: Reply) -> dict:
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": "stop",
            }
        ],
    }
    if reply.prompt_tokens is not None:
        body["usage"] = _usage(reply)
    return body


# -- fixtures (import them into a test module to use them) ---------------------


@pytest.fixture
def llm_server():
    server = OpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture
def llm_env(llm_server, monkeypatch):
    """The application configured, through its environment, to use the loopback server."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("LLM_MODEL", "test-model")
    monkeypatch.setenv("LLM_TIMEOUT", "10")
    monkeypatch.setenv("LLM_MAX_RETRIES", "1")
    monkeypatch.delenv("OPENAI_API_KEY_FILE", raising=False)
    monkeypatch.delenv("LLM_STREAM", raising=False)
    return llm_server


@pytest.fixture
def no_llm(monkeypatch):
    """No endpoint and no key: the normal "no LLM" state."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_API_KEY_FILE", "LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
