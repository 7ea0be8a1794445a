"""The ASGI application: Django, with the MCP server at /mcp/ (knowledge.mcp.http).

Serve it with an ASGI server, e.g. ``uvicorn config.asgi:application``; the
server's lifespan events start the MCP session manager.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
django_application = get_asgi_application()

from knowledge.mcp.http import with_mcp  # noqa: E402 - imports models: Django must be set up first

application = with_mcp(django_application)
