"""The client for any OpenAI-compatible chat-completions endpoint.

Configuration is resolved on every call, so an operator's change applies to the
next question with no restart: a non-empty field of the admin's LLMSettings
row wins, otherwise the environment:

    OPENAI_BASE_URL        endpoint (empty with a key: api.openai.com)
    OPENAI_API_KEY         key (or OPENAI_API_KEY_FILE); optional for local servers
    LLM_MODEL              model name; required
    LLM_TIMEOUT            seconds per request and for a whole streamed answer (60)
    LLM_MAX_RETRIES        retries of 408/409/429/5xx and connection errors (2)
    LLM_TEMPERATURE        (0.1)
    LLM_MAX_OUTPUT_TOKENS  (1024)
    LLM_STREAM             stream answers (true)

No endpoint and no key is the normal "no LLM" state: ``configured`` is False
and callers answer extractively. The database connection is released before
every network call (a slow LLM must not hold a pooled connection).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.core.exceptions import ImproperlyConfigured

from config.base.connections import release_connections
from config.base.env import env_bool, env_int, env_str
from knowledge.models import LLMSettings
from knowledge.text.token_counts import llm_token_count

logger = logging.getLogger(__name__)

# Local OpenAI-compatible servers (llama.cpp, vLLM) accept any key; the client insists on one.
PLACEHOLDER_KEY = "not-needed"
TOKEN_SOURCE_USAGE = "usage"
TOKEN_SOURCE_ESTIMATE = "estimate"


class LLMError(Exception):
    """The call failed (configuration, connection, HTTP status, timeout, empty answer)."""


@dataclass(frozen=True)
class LLMConfig:
    base_url: str = ""
    api_key: str = ""
    model: str = ""
    timeout: float = 60.0
    max_retries: int = 2
    temperature: float = 0.1
    max_output_tokens: int = 1024
    stream: bool = True
    enabled: bool = True
    sources: dict = field(default_factory=dict)  # field -> "admin" | "environment" | "default"

    @property
    def configured(self) -> bool:
        return self.enabled and bool(self.model) and bool(self.base_url or self.api_key)

    @property
    def status(self) -> str:
        """Why there is, or is not, an LLM, for pages and the admin."""
        if not self.enabled:
            return "switched off by the operator"
        if not (self.base_url or self.api_key):
            return "no endpoint or API key configured"
        if not self.model:
            return "no model configured (LLM_MODEL)"
        return f"{self.model} at {self.base_url or 'api.openai.com'}"

    def describe(self) -> dict:
        """The configuration with the key masked, and where each value came from."""
        return {
            "configured": self.configured,
            "status": self.status,
            "base_url": self.base_url,
            "api_key": "set" if self.api_key else "",
            "model": self.model,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "temperature": self.temperature,
            "max_output_tokens": self.max_output_tokens,
            "stream": self.stream,
            "sources": self.sources,
        }


@dataclass
class LLMResult:
    text: str
    input_tokens: int
    output_tokens: int
    token_source: str
    model: str
    duration_ms: float


def call_record(purpose: str, result: LLMResult) -> dict:
    """One LLM call as a turn records it (its calls, the token ledger, the evaluation's cost)."""
    return {
        "purpose": purpose,
        "model": result.model,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "token_source": result.token_source,
        "duration_ms": result.duration_ms,
    }


def llm_config() -> LLMConfig:
    """The effective configuration: admin row fields over environment over defaults.

    Raises ImproperlyConfigured for a malformed value, naming it.
    """
    row = LLMSettings.load()
    values, sources = {}, {}
    for name, admin_value, env_value in _candidates(row):
        if admin_value not in (None, ""):
            values[name], sources[name] = admin_value, "admin"
        elif env_value not in (None, ""):
            values[name], sources[name] = env_value, "environment"
        else:
            sources[name] = "default"
    return LLMConfig(
        enabled=row.enabled,
        stream=env_bool("LLM_STREAM", True),
        sources=sources,
        **{k: v.strip() if isinstance(v, str) else v for k, v in values.items()},
    )


def _candidates(row):
    return (
        ("base_url", row.base_url, env_str("OPENAI_BASE_URL")),
        ("api_key", row.api_key, env_str("OPENAI_API_KEY")),
        ("model", row.model, env_str("LLM_MODEL")),
        ("timeout", row.timeout_seconds, _env_float("LLM_TIMEOUT", 1, 600)),
        ("max_retries", row.max_retries, env_int("LLM_MAX_RETRIES", None, minimum=0)),
        ("temperature", row.temperature, _env_float("LLM_TEMPERATURE", 0, 2)),
        ("max_output_tokens", row.max_output_tokens, env_int("LLM_MAX_OUTPUT_TOKENS", None, minimum=16)),
    )


def _env_float(name: str, minimum: float, maximum: float) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfigured(f"{name}={value} must be between {minimum} and {maximum}")
    return value


def _client(config: LLMConfig):
    import openai

    return openai.OpenAI(
        base_url=config.base_url or None,
        api_key=config.api_key or PLACEHOLDER_KEY,
        timeout=openai.Timeout(config.timeout, connect=min(config.timeout, 10.0)),
        max_retries=config.max_retries,
    )


def complete(config: LLMConfig, messages: list[dict], *, max_tokens: int | None = None) -> LLMResult:
    """One non-streamed completion."""
    release_connections()
    started = time.perf_counter()
    with _translated_errors(config):
        response = _client(config).chat.completions.create(
            model=config.model,
            messages=messages,
            temperature=config.temperature,
            max_tokens=max_tokens or config.max_output_tokens,
        )
    text = (response.choices[0].message.content or "") if response.choices else ""
    return _result(config, messages, _storable(text), response.usage, started)


def stream_chat(config: LLMConfig, messages: list[dict]) -> Iterator[str]:
    """Yield the answer's text as it arrives; the generator returns the LLMResult.

    Usage: ``result = yield from stream_chat(config, messages)``. The timeout
    bounds the whole answer, not only each read.
    """
    if not config.stream:
        result = complete(config, messages)
        yield result.text
        return result
    release_connections()
    started = time.perf_counter()
    client = _client(config)
    deadline = time.monotonic() + config.timeout
    parts, usage, finished = [], None, False
    with _translated_errors(config):
        stream = client.chat.completions.create(
            model=config.model,
            messages=messages,
            temperature=config.temperature,
            max_tokens=config.max_output_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )
        with stream:
            for chunk in stream:
                if time.monotonic() > deadline:
                    raise LLMError(f"timed out: the answer took longer than {config.timeout:g}s")
                usage = chunk.usage or usage
                choice = chunk.choices[0] if chunk.choices else None
                finished = finished or bool(choice and choice.finish_reason)
                if choice and choice.delta and choice.delta.content:
                    parts.append(_storable(choice.delta.content))
                    yield parts[-1]
    if not finished:
        # The connection closed before the model said it was done: the answer is cut off.
        raise LLMError("the answer stream ended before the answer was complete")
    return _result(config, messages, "".join(parts), usage, started)


def _storable(text: str) -> str:
    """The model's text without NUL, which PostgreSQL cannot store (in text or in the turn's events)."""
    return text.replace("\x00", "")


def _result(config, messages, text, usage, started) -> LLMResult:
    if not text.strip():
        raise LLMError("the language model returned an empty answer")
    if usage is not None and usage.prompt_tokens is not None:
        tokens = (usage.prompt_tokens, usage.completion_tokens or 0, TOKEN_SOURCE_USAGE)
    else:
        # The server reported no usage: count it ourselves and say so.
        tokens = (messages_token_count(messages), llm_token_count(text), TOKEN_SOURCE_ESTIMATE)
    return LLMResult(
        text=text,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        token_source=tokens[2],
        model=config.model,
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
    )


def messages_token_count(messages: list[dict]) -> int:
    # About four tokens of chat framing per message (OpenAI's published rule of thumb).
    return sum(llm_token_count(m["content"]) + 4 for m in messages)


class _translated_errors:
    """Turn every client failure into an LLMError with a message an operator can act on."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or isinstance(exc, (LLMError, GeneratorExit)):
            return False
        import openai

        if isinstance(exc, openai.APITimeoutError):
            message = f"timed out after {self.config.timeout:g}s"
        elif isinstance(exc, openai.APIStatusError):
            message = f"HTTP {exc.status_code} from the LLM endpoint: {_short(exc.message)}"
        elif isinstance(exc, openai.APIConnectionError):
            message = f"could not connect to {self.config.base_url or 'the LLM endpoint'}"
        elif isinstance(exc, openai.OpenAIError):
            message = f"LLM client error: {_short(str(exc))}"
        elif _is_transport_error(exc):
            # Raised while reading a stream, where the client does not wrap them.
            timeout = "Timeout" in type(exc).__name__
            message = f"timed out after {self.config.timeout:g}s" if timeout else f"connection lost: {exc}"
        else:
            return False
        logger.warning("LLM call failed (%s): %s", self.config.model, message)
        raise LLMError(message) from exc


def _is_transport_error(exc: BaseException) -> bool:
    # openai ships on httpx or its fork httpx2, depending on the version.
    return type(exc).__module__.split(".")[0] in {"httpx", "httpx2", "httpcore", "h11"}


def _short(text: str, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
