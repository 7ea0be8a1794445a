"""The ASGI application a web process serves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROGRAM = """
import sys
import config.asgi as asgi
asgi.embedding_warm_up.join(600)
print("== warmed up", file=sys.stderr, flush=True)
from knowledge.clients.tokens import _encoding
print("== token table loaded:", _encoding.cache_info().currsize, file=sys.stderr, flush=True)
from knowledge.clients.embedding import embed_query
embed_query("a question this process was never asked")
print("== answered", file=sys.stderr, flush=True)
"""


def test_a_web_process_loads_the_embedding_model_before_its_first_question():
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "LOG_LEVEL": "INFO"}
    run = subprocess.run(
        [sys.executable, "-c", _PROGRAM],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    starting, _, after = run.stderr.partition("== warmed up")
    assert "Loading the embedding model" in starting
    assert "== answered" in after
    assert "== token table loaded: 1" in after  # the first answer does not wait for tiktoken's table
    assert "Loading the embedding model" not in after
