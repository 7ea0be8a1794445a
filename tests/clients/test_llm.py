"""The LLM client against a real OpenAI-compatible HTTP server on 127.0.0.1.

Configuration goes through the environment and the admin row, exactly as in
production; the openai client is never patched.
"""

from __future__ import annotations

import time

import pytest
from django.core.exceptions import ImproperlyConfigured

from knowledge.clients.llm import LLMError, complete, llm_config, stream_chat
from knowledge.models import LLMSettings
from knowledge.text.token_counts import llm_token_count
from tests.synthesis.openai_server import Reply

# The loopback LLM server's fixtures: llm_server, llm_env, no_llm.
pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]


def drain(generator):
    """All pieces a generator yields, and the value it returns."""
    pieces = []
    while True:
        try:
            pieces.append(next(generator))
        except StopIteration as done:
            return pieces, done.value


def test_no_endpoint_and_no_key_is_a_normal_state(no_llm):
    config = llm_config()
    assert config.configured is False
    assert config.status == "no endpoint or API key configured"


def test_environment_configures_the_client(llm_env):
    config = llm_config()
    assert config.configured
    assert (config.base_url, config.model, config.timeout, config.max_retries) == (
        llm_env.url,
        "test-model",
        10.0,
        1,
    )
    assert config.sources["model"] == "environment"
    assert config.describe()["api_key"] == "set"  # never the key itself


def test_the_admin_row_overrides_the_environment(llm_env, monkeypatch):
    LLMSettings.objects.create(model="admin-model", timeout_seconds=7, base_url="")
    config = llm_config()
    assert (config.model, config.timeout) == ("admin-model", 7.0)
    assert config.base_url == llm_env.url  # empty admin field: the environment's value
    assert (config.sources["model"], config.sources["base_url"]) == ("admin", "environment")
    LLMSettings.objects.update(enabled=False)
    assert llm_config().configured is False
    assert llm_config().status == "switched off by the operator"


def test_a_malformed_environment_value_is_refused_by_name(llm_env, monkeypatch):
    monkeypatch.setenv("LLM_TIMEOUT", "soon")
    with pytest.raises(ImproperlyConfigured, match="LLM_TIMEOUT"):
        llm_config()


def test_streamed_answer_arrives_in_pieces_with_the_servers_usage(llm_env):
    llm_env.script(
        Reply(text="Rayleigh scattering of sunlight [Source 1].", prompt_tokens=812, completion_tokens=23)
    )
    pieces, result = drain(stream_chat(llm_config(), MESSAGES))
    assert len(pieces) > 1 and "".join(pieces) == "Rayleigh scattering of sunlight [Source 1]."
    assert (result.input_tokens, result.output_tokens, result.token_source) == (812, 23, "usage")
    request = llm_env.requests[-1]
    assert request.streamed and request.body["stream_options"] == {"include_usage": True}
    assert request.body["model"] == "test-model" and request.messages == MESSAGES
    assert request.headers["authorization"] == "Bearer test-key"


def test_without_reported_usage_tokens_are_estimated_and_labelled(llm_env):
    llm_env.script(Reply(text="An answer.", prompt_tokens=None))
    _, result = drain(stream_chat(llm_config(), MESSAGES))
    assert result.token_source == "estimate"
    assert result.output_tokens == llm_token_count("An answer.")


def test_streaming_can_be_switched_off(llm_env, monkeypatch):
    monkeypatch.setenv("LLM_STREAM", "false")
    llm_env.script(Reply(text="Whole answer at once.", prompt_tokens=10, completion_tokens=4))
    pieces, result = drain(stream_chat(llm_config(), MESSAGES))
    assert pieces == ["Whole answer at once."] and result.input_tokens == 10
    assert not llm_env.requests[-1].streamed


def test_a_server_error_is_retried_then_succeeds(llm_env):
    llm_env.script(Reply(status=503), Reply(text="Recovered.", prompt_tokens=5, completion_tokens=2))
    result = complete(llm_config(), MESSAGES)
    assert result.text == "Recovered." and len(llm_env.requests) == 2


def test_retries_are_bounded(llm_env, monkeypatch):
    monkeypatch.setenv("LLM_MAX_RETRIES", "2")
    llm_env.default = Reply(status=500, error_message="model crashed")
    with pytest.raises(LLMError, match="HTTP 500.*model crashed"):
        complete(llm_config(), MESSAGES)
    assert len(llm_env.requests) == 3  # the first try and two retries


def test_a_client_error_is_not_retried(llm_env):
    llm_env.default = Reply(status=400, error_message="bad model name")
    with pytest.raises(LLMError, match="HTTP 400"):
        complete(llm_config(), MESSAGES)
    assert len(llm_env.requests) == 1


def test_a_slow_server_times_out(llm_env, monkeypatch):
    monkeypatch.setenv("LLM_TIMEOUT", "1")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    llm_env.script(Reply(delay=5))
    started = time.monotonic()
    with pytest.raises(LLMError, match="timed out"):
        drain(stream_chat(llm_config(), MESSAGES))
    assert time.monotonic() - started < 3


def test_the_timeout_bounds_a_whole_streamed_answer(llm_env, monkeypatch):
    monkeypatch.setenv("LLM_TIMEOUT", "1")
    # Each piece comes well within the read timeout, but the answer as a whole does not.
    llm_env.script(Reply(text="one two three four five six seven eight nine ten", chunk_delay=0.4))
    with pytest.raises(LLMError, match="timed out"):
        drain(stream_chat(llm_config(), MESSAGES))


def test_a_stream_cut_off_half_way_is_an_error(llm_env):
    llm_env.script(Reply(text="one two three four five six", cut_after_chunks=2))
    with pytest.raises(LLMError, match="ended before"):
        drain(stream_chat(llm_config(), MESSAGES))


def test_an_unreachable_endpoint_is_an_error(llm_env, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: nothing listens
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    with pytest.raises(LLMError, match="could not connect"):
        complete(llm_config(), MESSAGES)
