"""The test embedding and rerank server (tests/model_server.py), checked with the real ``openai`` client."""

import base64
import json
import urllib.error
import urllib.request

import numpy as np
import openai
import pytest

# Loaded as a plugin (its fixtures) after this module imports it: mark it first, as
# tests/synthesis/__init__.py does for openai_server, or pytest warns that it cannot rewrite it.
pytest.register_assert_rewrite("tests.model_server")

from tests.model_server import INVALID_JSON, MISSING_DATA, ModelServer, Reply  # noqa: E402

pytest_plugins = ["tests.model_server"]

KEY = "sk-test-do-not-leak"
SENTENCES = ["The cat sits on the mat.", "A cat is sitting on a rug."]


def client(server, **options) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.base_url, api_key=KEY, **{"max_retries": 0, "timeout": 30, **options}
    )


def post(server, path: str, body: dict | bytes, *, timeout: float = 30) -> tuple[int, object]:
    """POST to ``{base_url}{path}``, or to ``path`` at the server's root when it starts with "//"."""
    url = server.base_url.removesuffix("/v1") + path[1:] if path.startswith("//") else server.base_url + path
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def vectors(response) -> np.ndarray:
    return np.array([row.embedding for row in sorted(response.data, key=lambda row: row.index)])


# -- embeddings ------------------------------------------------------------------


def test_the_openai_client_gets_768_unit_floats_per_text_from_mpnet(mpnet_server):
    response = client(mpnet_server).embeddings.create(model="all-mpnet-base-v2", input=SENTENCES)
    found = vectors(response)
    assert found.shape == (2, 768)
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-4)
    assert found[0] @ found[1] > 0.6  # a paraphrase
    assert response.model == "all-mpnet-base-v2"
    assert response.usage.prompt_tokens == response.usage.total_tokens > 10
    (request,) = mpnet_server.requests
    assert request.path == "/v1/embeddings"
    assert request.authorization == f"Bearer {KEY}"
    # The client asks for base64 unless told otherwise; the server answered in base64.
    assert request.body == {"model": "all-mpnet-base-v2", "input": SENTENCES, "encoding_format": "base64"}


def test_base64_and_float_formats_carry_the_same_vectors(mpnet_server):
    openai_client = client(mpnet_server)
    as_base64 = vectors(openai_client.embeddings.create(model="m", input=SENTENCES))
    as_floats = vectors(openai_client.embeddings.create(model="m", input=SENTENCES, encoding_format="float"))
    assert np.allclose(as_base64, as_floats, atol=1e-6)
    status, raw = post(
        mpnet_server, "/embeddings", {"model": "m", "input": "one", "encoding_format": "base64"}
    )
    encoded = json.loads(raw)["data"][0]["embedding"]
    assert status == 200 and isinstance(encoded, str)
    assert np.frombuffer(base64.b64decode(encoded), dtype="<f4").shape == (768,)


def test_minilm_answers_384_dimensions_equal_to_the_model_run_locally(minilm_server, minilm_model):
    response = client(minilm_server).embeddings.create(
        model="all-MiniLM-L6-v2", input="The cat sits on the mat."
    )
    (found,) = vectors(response)
    assert found.shape == (384,)
    local = minilm_model.encode("The cat sits on the mat.", normalize_embeddings=True)
    assert float(found @ local) > 0.9999


def test_token_arrays_and_empty_input_are_refused_as_openai_does(minilm_server):
    with pytest.raises(openai.BadRequestError):
        client(minilm_server).embeddings.create(model="m", input=[[101, 102]])
    status, raw = post(minilm_server, "/embeddings", {"model": "m", "input": []})
    assert status == 400 and "input" in json.loads(raw)["error"]["message"]


def test_a_wrong_api_key_is_refused_and_recorded(minilm_server):
    minilm_server.api_key = "sk-the-right-one"
    with pytest.raises(openai.AuthenticationError):
        client(minilm_server).embeddings.create(model="m", input="x")
    assert [r.authorization for r in minilm_server.requests] == [f"Bearer {KEY}"]


# -- rerank ----------------------------------------------------------------------

QUERY = "How do I reset my password?"
DOCUMENTS = [
    "The cafeteria serves lunch from noon to two.",
    "To reset your password, open Settings, choose Security and click 'Reset password'.",
    "Quarterly revenue grew by ten percent.",
]


@pytest.mark.parametrize("path", ["/rerank", "//rerank"])  # {base}/rerank and /rerank at the root
def test_rerank_puts_the_related_document_first(mpnet_server, path):
    body = {"model": "rerank", "query": QUERY, "documents": DOCUMENTS, "top_n": 2, "return_documents": True}
    status, raw = post(mpnet_server, path, body)
    answer = json.loads(raw)
    assert status == 200
    results = answer["results"]
    assert [r["index"] for r in results][0] == 1 and len(results) == 2
    assert results[0]["relevance_score"] > results[1]["relevance_score"]
    assert results[0]["document"] == {"text": DOCUMENTS[1]}
    assert mpnet_server.requests[-1].path == ("/rerank" if path == "//rerank" else "/v1/rerank")


def test_rerank_accepts_cohere_documents_and_answers_tei_requests_in_tei_shape(minilm_server):
    status, raw = post(
        minilm_server, "/rerank", {"query": QUERY, "documents": [{"text": d} for d in DOCUMENTS]}
    )
    assert status == 200
    scores = [r["relevance_score"] for r in json.loads(raw)["results"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 3
    status, raw = post(minilm_server, "/rerank", {"query": QUERY, "texts": DOCUMENTS})
    tei = json.loads(raw)
    assert status == 200 and isinstance(tei, list) and tei[0]["index"] == 1 and "score" in tei[0]


# -- faults ----------------------------------------------------------------------


def test_a_429_with_retry_after_reaches_the_client_and_a_retrying_client_succeeds(minilm_server):
    minilm_server.script(Reply(status=429, retry_after="0", error_message="slow down"))
    with pytest.raises(openai.RateLimitError) as raised:
        client(minilm_server).embeddings.create(model="m", input="x")
    assert raised.value.status_code == 429
    assert raised.value.response.headers["retry-after"] == "0"
    minilm_server.script(Reply(status=429, retry_after="0"))
    response = client(minilm_server, max_retries=1).embeddings.create(model="m", input="x")
    assert len(response.data[0].embedding) == 384
    assert len(minilm_server.requests) == 3


def test_scripted_replies_are_used_in_order_then_the_default(minilm_server):
    minilm_server.script(Reply(status=500), Reply(dimensions=3))
    with pytest.raises(openai.InternalServerError):
        client(minilm_server).embeddings.create(model="m", input="x")
    assert len(client(minilm_server).embeddings.create(model="m", input="x").data[0].embedding) == 3
    assert len(client(minilm_server).embeddings.create(model="m", input="x").data[0].embedding) == 384


def test_a_wrong_dimension_fewer_vectors_or_reversed_rows(minilm_server):
    minilm_server.default = Reply(dimensions=100)
    assert vectors(client(minilm_server).embeddings.create(model="m", input=SENTENCES)).shape == (2, 100)
    minilm_server.default = Reply(count=1)
    assert len(client(minilm_server).embeddings.create(model="m", input=SENTENCES).data) == 1
    minilm_server.default = Reply(reverse=True)
    rows = client(minilm_server).embeddings.create(model="m", input=SENTENCES).data
    assert [row.index for row in rows] == [1, 0]


def test_malformed_bodies(minilm_server):
    minilm_server.script(Reply(body=INVALID_JSON), Reply(body=MISSING_DATA), Reply(body=MISSING_DATA))
    status, raw = post(minilm_server, "/embeddings", {"model": "m", "input": "x"})
    assert status == 200 and raw == INVALID_JSON
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    with pytest.raises(ValueError, match="No embedding data"):  # the client's own check of "data"
        client(minilm_server).embeddings.create(model="m", input="x")
    status, raw = post(minilm_server, "/embeddings", {"model": "m", "input": "x"})
    assert "data" not in json.loads(raw)


def test_invalid_json_through_the_openai_client(minilm_server):
    """The client does not wrap it in an APIError: its caller sees json's own error."""
    minilm_server.script(Reply(body=INVALID_JSON))
    with pytest.raises(json.JSONDecodeError):
        client(minilm_server).embeddings.create(model="m", input="x")


def test_a_delay_past_the_client_timeout(minilm_server):
    minilm_server.script(Reply(delay=5))
    with pytest.raises(openai.APITimeoutError):
        client(minilm_server, timeout=0.3).embeddings.create(model="m", input="x")


def test_a_stopped_server_refuses_connections(minilm_server):
    url = minilm_server.base_url
    minilm_server.stop()
    with pytest.raises(openai.APIConnectionError):
        openai.OpenAI(base_url=url, api_key=KEY, max_retries=0).embeddings.create(model="m", input="x")
    with pytest.raises(urllib.error.URLError) as raised:
        urllib.request.urlopen(urllib.request.Request(url + "/embeddings", data=b"{}"), timeout=5)
    assert isinstance(raised.value.reason, ConnectionRefusedError)


def test_an_unknown_model_kind_is_refused():
    with pytest.raises(ValueError, match="mpnet, minilm"):
        ModelServer("e5")
