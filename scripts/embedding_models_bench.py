"""Embedding speed and memory of one registry model, in a process of its own (for its peak RSS).

    .venv/bin/python scripts/embedding_models_bench.py MODEL [--chunks 300] [--queries 50]

Encodes the same chunks for every model: the first ``--chunks`` 1,000-character pieces of the
corpus's bates.txt, as the pipeline would (embed_texts, longest first, the configured batch size),
then ``--queries`` distinct short questions one at a time (embed_query, cache cleared). Prints one
JSON line: chunks/s, query ms (median, p95), peak RSS after loading and at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402

django.setup()

from knowledge.clients.embedding import embed_query, embed_texts, query_cache_clear  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "text" / "obama.txt"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--queries", type=int, default=50)
    options = parser.parse_args()
    text = " ".join(CORPUS.read_text().split())
    chunks = [text[i : i + 1000] for i in range(0, len(text), 1000)][: options.chunks]
    embed_texts(chunks[:2], model=options.model)  # load the model outside the timings
    loaded = peak_rss_mb()
    started = time.perf_counter()
    embed_texts(chunks, model=options.model)
    seconds = time.perf_counter() - started
    query_cache_clear()
    timings = []
    for i in range(options.queries):
        begun = time.perf_counter()
        embed_query(f"what did the author write about topic number {i}?", model=options.model)
        timings.append((time.perf_counter() - begun) * 1000)
    print(
        json.dumps(
            {
                "model": options.model,
                "chunks": len(chunks),
                "chunks_per_s": round(len(chunks) / seconds, 1),
                "query_ms_median": round(statistics.median(timings), 2),
                "query_ms_p95": round(sorted(timings)[int(len(timings) * 0.95) - 1], 2),
                "peak_rss_mb_loaded": round(loaded, 1),
                "peak_rss_mb_end": round(peak_rss_mb(), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
