"""The ONNX encoders compute the model's vectors: the same as sentence-transformers on torch.

Questions are encoded with the ONNX network whatever the documents' backend,
so a question's vector must be the one torch would give, or the question and
the chunks it should find would sit in slightly different spaces.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from knowledge.clients.embedding import (
    BACKENDS,
    OnnxEncoder,
    embed_for_ranking,
    embed_query,
    embed_short_texts,
    get_model,
    onnx_model_file,
    query_backend,
    query_cache_clear,
    query_model,
)

TEXTS = [
    "How do signals work?",
    "What is a context processor in Django templates, and how do I write one of my own?",
    # Longer than the model's 256 word pieces: both must truncate at the same place.
    "Pagination splits a queryset into pages of objects. " * 60,
    "Ünïcödé, emoji 🙂 and CJK 漢字 in one line",
    "",
]


@pytest.fixture(autouse=True)
def empty_query_cache():
    query_cache_clear()
    yield
    query_cache_clear()


def _torch(texts):
    return get_model("torch").encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)


def test_onnx_vectors_equal_torch_vectors_in_one_padded_batch():
    onnx = get_model("onnx").encode(TEXTS, batch_size=32, normalize_embeddings=True)
    torch = _torch(TEXTS)
    assert onnx.shape == torch.shape == (len(TEXTS), 384)
    assert onnx.dtype == np.float32
    cosines = np.sum(onnx * torch, axis=1)
    assert cosines.min() > 0.9999, cosines
    np.testing.assert_allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


def test_a_text_gets_the_same_vector_alone_as_in_a_padded_batch():
    encoder = get_model("onnx")
    batch = encoder.encode(TEXTS, batch_size=32)
    alone = np.stack([encoder.encode([text])[0] for text in TEXTS])
    np.testing.assert_allclose(batch, alone, atol=1e-5)


def test_onnx_batches_texts_longest_first_and_returns_them_in_the_order_given(monkeypatch):
    """As sentence-transformers does: a batch pads to its longest text, so similar lengths go together."""
    encoder = get_model("onnx")
    texts = ["short one", TEXTS[2], "short two", TEXTS[1]]
    batches = []
    original = encoder._batch

    def recording(batch):
        batches.append(batch)
        return original(batch)

    monkeypatch.setattr(encoder, "_batch", recording)
    vectors = encoder.encode(texts, batch_size=2)
    assert batches == [[TEXTS[2], TEXTS[1]], ["short one", "short two"]]
    monkeypatch.undo()
    np.testing.assert_allclose(vectors, np.stack([encoder.encode([text])[0] for text in texts]), atol=1e-5)


def test_ranking_vectors_stay_close_to_the_documents_and_do_not_depend_on_the_workers():
    """The summary ranks its sentences on the quantised network: one sentence per call, so the
    vectors are the same on any number of workers, and close to the documents' own."""
    texts = [f"Sentence {i}: {TEXTS[i % 4][: 20 + 7 * i]}" for i in range(9)]
    one_by_one = embed_for_ranking(texts)
    parallel = embed_for_ranking(texts, workers=3)
    assert np.array_equal(parallel, one_by_one)
    cosines = np.sum(parallel * _torch(texts), axis=1)
    assert cosines.min() > 0.98, cosines


def test_questions_are_encoded_by_onnx_when_documents_are_by_torch():
    assert query_backend("torch") == "onnx"
    assert query_backend("onnx-int8") == "onnx-int8"
    assert isinstance(query_model("onnx"), OnnxEncoder)
    question = "How do I paginate a queryset in a class-based view?"
    vector = embed_query(question, backend="torch")
    assert float(vector @ _torch([question])[0]) > 0.9999


def test_int8_vectors_stay_close_to_torch_and_are_exported_once():
    first = onnx_model_file("onnx-int8")
    assert (
        onnx_model_file("onnx-int8") == first
        and first.stat().st_size < onnx_model_file("onnx").stat().st_size
    )
    cosines = np.sum(get_model("onnx-int8").encode(TEXTS[:4]) * _torch(TEXTS[:4]), axis=1)
    assert cosines.min() > 0.98, cosines


def test_threads_share_one_encoder_without_tokenizer_conflicts():
    encoder = query_model("onnx")
    expected = encoder.encode(TEXTS[:2])
    results, errors = [], []

    def encode():
        try:
            for _ in range(10):
                results.append(encoder.encode(TEXTS[:2]))
        except Exception as exc:  # reported below, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=encode) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 40
    for result in results:
        np.testing.assert_allclose(result, expected, atol=1e-5)


def test_no_texts_give_an_empty_matrix_of_the_model_width():
    assert get_model("onnx").encode([]).shape == (0, 384)


@pytest.mark.parametrize("backend", BACKENDS)
def test_short_texts_in_parallel_batches_get_the_same_vectors_bit_for_bit(backend):
    """A summary's sentences, several batches at once on one onnxruntime thread each, are the vectors
    they were one batch after another (on every core, for the ONNX backends)."""
    texts = [f"Sentence {i}: {TEXTS[i % 4][: 20 + 7 * i]}" for i in range(27)]  # four batches, one short
    one_by_one = embed_short_texts(texts, backend=backend)
    parallel = embed_short_texts(texts, backend=backend, workers=3)
    assert parallel.shape == (27, 384)
    assert np.array_equal(parallel, one_by_one)
    assert len({row.tobytes() for row in parallel}) == 27  # every text its own vector, in its own row


def test_a_sentence_seen_before_is_not_encoded_again_and_keeps_its_vector(monkeypatch):
    from knowledge.clients import embedding

    texts = [
        "The Board meets twice a year.",
        "Applications take about 30 minutes to fill in.",
        "A third one.",
    ]
    first = embedding.embed_sentences(texts[:2])
    assert np.allclose(first, embedding.embed_short_texts(texts[:2]), atol=1e-5)
    encoded = []
    real = embedding.embed_short_texts
    monkeypatch.setattr(
        embedding, "embed_short_texts", lambda batch, **kw: encoded.append(batch) or real(batch, **kw)
    )
    again = embedding.embed_sentences([texts[1], texts[2], texts[0]])
    assert encoded == [[texts[2]]]  # only the new sentence went to the encoder
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])
    kept = embedding._sentence_vectors[(embedding.configured_backend(), texts[0])]
    assert kept.base is None and not kept.flags.writeable  # its own copy, shared read-only
