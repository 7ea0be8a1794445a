"""The ASGI application a web process serves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_web_process(program: str, **environment: str) -> subprocess.CompletedProcess:
    """``program`` in a fresh interpreter that imports the ASGI application as a web process does."""
    run = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **environment},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run


_PROGRAM = """
import sys
import config.asgi as asgi
asgi.embedding_warm_up.join(600)
print("== warmed up", file=sys.stderr, flush=True)
from knowledge.text.token_counts import _encoding
print("== token table loaded:", _encoding.cache_info().currsize, file=sys.stderr, flush=True)
from knowledge.clients.embedding import embed_query
embed_query("a question this process was never asked")
print("== answered", file=sys.stderr, flush=True)
"""


def test_a_web_process_loads_the_embedding_model_before_its_first_question():
    run = _run_web_process(_PROGRAM, LOG_LEVEL="INFO")
    starting, _, after = run.stderr.partition("== warmed up")
    assert "Loading the embedding model" in starting
    assert "== answered" in after
    assert "== token table loaded: 1" in after  # the first answer does not wait for tiktoken's table
    assert "Loading the embedding model" not in after


_EXTRACTIVE_PROGRAM = """
import sys
import config.asgi as asgi
asgi.embedding_warm_up.join(600)
from knowledge.models import Chunk, Document
from knowledge.retrieval.service import RetrievedChunk
from knowledge.synthesis.extractive import extractive_answer
text = "A gravity hill is a place where a slight downhill slope looks like an uphill slope."
chunk = Chunk(pk=1, document=Document(pk=1, filename="hills.md", title=""), collection_id=1,
              content=text, source_ref="heading=Hills")
source = RetrievedChunk(chunk, {}, source_number=1)
answer = extractive_answer(question="Why do cars seem to roll uphill?", sources=[source])
assert answer.sentences, answer.text
print("torch imported:", "torch" in sys.modules)
"""


def test_a_web_process_answers_extractively_without_loading_torch():
    """Questions and extractive answers use the ONNX encoder (the same vectors): torch stays out of web
    processes, which saves each of them about half a gigabyte."""
    run = _run_web_process(_EXTRACTIVE_PROGRAM, KNOWLEDGE_EMBEDDING_BACKEND="torch")
    assert "torch imported: False" in run.stdout


_COLLECTOR_PROGRAM = """
import gc
import config.asgi as asgi
asgi.embedding_warm_up.join(600)
print("after", gc.get_threshold()[0], "frozen", gc.get_freeze_count())
"""


def test_a_warmed_up_web_process_keeps_its_start_up_objects_out_of_the_collector_and_collects_less_often():
    """Under load the cyclic collector walked the start-up objects and the requests in flight again and
    again (config.asgi._start_up_objects_frozen): once warmed up they are frozen, and the young
    generation is collected every YOUNG_COLLECTION_THRESHOLD allocations instead of Python's 700."""
    run = _run_web_process(_COLLECTOR_PROGRAM)
    words = run.stdout.split()
    assert words[words.index("after") + 1] == "10000"
    assert int(words[words.index("frozen") + 1]) > 100_000  # Django's, the model's and the token table's
