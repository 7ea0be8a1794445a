"""The ASGI application: Django, with the MCP server at /mcp/ (knowledge.mcp.http).

Serve it with an ASGI server, e.g. ``uvicorn config.asgi:application``; the
server's lifespan events start the MCP session manager.
"""

import os
import threading

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
django_application = get_asgi_application()

# Both import models: Django must be set up first.
from knowledge.clients.embedding import embed_query  # noqa: E402
from knowledge.mcp.http import with_mcp  # noqa: E402

application = with_mcp(django_application)


def _load_the_embedding_model() -> None:
    """Load the model as the process starts, not on the first question it is asked.

    Loading takes seconds, tens of seconds on a busy machine: every web process's
    first question after a start waited for it (measured: 28 s under load with two
    processes). An error here is printed by the thread and raised again by the
    first question, which loads the model itself.
    """
    embed_query("warm-up")


embedding_warm_up = threading.Thread(target=_load_the_embedding_model, name="embedding-warm-up", daemon=True)
embedding_warm_up.start()
