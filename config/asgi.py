"""The ASGI application: Django, with the MCP server at /mcp/ (knowledge.mcp.http).

Serve it with an ASGI server, e.g. ``uvicorn config.asgi:application``; the
server's lifespan events start the MCP session manager.
"""

import gc
import os
import threading

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
django.setup(set_prefix=False)  # what django.core.asgi.get_asgi_application does first

from config.asgi_handler import SyncChainASGIHandler  # noqa: E402

django_application = SyncChainASGIHandler()

# Both import models: Django must be set up first.
from django.urls import get_resolver  # noqa: E402

from knowledge.clients.embedding import embed_query  # noqa: E402
from knowledge.mcp.http import with_mcp  # noqa: E402
from knowledge.text.token_counts import llm_token_count  # noqa: E402

application = with_mcp(django_application)


def _load_the_embedding_model() -> None:
    """Load the model, the token table and the URL patterns as the process starts, not on the first
    question it is asked.

    Loading takes seconds, tens of seconds on a busy machine: every web process's
    first question after a start waited for it (measured: 28 s under load with two
    processes; tiktoken's 100,000-entry table and the URL patterns took 45% of a web
    process's CPU in the first 20 s of a load test). An error here is printed by the
    thread and raised again by the first request that needs the same thing.
    """
    get_resolver().url_patterns  # noqa: B018  (imports every view module)
    llm_token_count("warm-up")
    embed_query("warm-up")
    _start_up_objects_frozen()


# Allocations (less deallocations) between two young-generation collections; Python's default is 700.
YOUNG_COLLECTION_THRESHOLD = 10_000


def _start_up_objects_frozen() -> None:
    """Keep the objects that live as long as the process out of the cyclic garbage collector's scans,
    and collect the young generation less often.

    A process holds ~200,000 tracked objects once it has started (Django's, the models' and token
    tables' Python parts); every full collection walked all of them again. Under the load benchmark
    a web process spent 16-18% of its CPU in the collector, most of it in full collections
    (gc.callbacks, 20 s of 20 clients); frozen, the full collections took 1.7 s instead of 6.3 s.
    Objects are still freed by their reference counts as before; only cycles among these would stay.

    What the collector still cost came from young collections: every 700 allocations it walked the
    objects of the ten or so requests in flight, and moved them on to older generations to be walked
    again, though they all die with their request (what a request leaves in cycles is ~210 objects:
    the DRF serializer's fields, the task Django's ASGI handler cancels). Collected every 10,000
    allocations instead, a process served 1.03 times the searches (knowledge_bench load, paired, 8
    rounds of 20 s, 0.96-1.09), against 1.05 with no collector at all; the cycles wait a little longer.
    """
    gc.collect()
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)


embedding_warm_up = threading.Thread(target=_load_the_embedding_model, name="embedding-warm-up", daemon=True)
embedding_warm_up.start()
