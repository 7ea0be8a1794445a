"""Settings for the REST API (/api/v1/): Django REST framework and drf-spectacular.

config/settings.py imports REST_FRAMEWORK and SPECTACULAR_SETTINGS from here.
Throttle rates come from the environment (API_THROTTLE_UPLOADS, API_THROTTLE_WRITES,
API_THROTTLE_RETRIEVE, API_THROTTLE_AUTH, API_THROTTLE_SIGNUP, API_THROTTLE_PASSWORD_RESET,
API_THROTTLE_SYNCS)
as "N/second|minute|hour|day" and
fail loudly on anything else. TRUSTED_PROXY_COUNT (default 0) is how many
proxies of the operator's own append to X-Forwarded-For; with 0 the header is
ignored and throttles count by the connection's address.
"""

from __future__ import annotations

import re

from django.core.exceptions import ImproperlyConfigured

from config.base.env import env_int, env_str

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$")


def env_rate(name: str, default: str) -> str:
    raw = env_str(name, default)
    match = _RATE.match(raw)
    if not match or int(match.group(1)) < 1:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a rate like '30/minute' (N/second|minute|hour|day)"
        )
    return f"{int(match.group(1))}/{match.group(2)}"


REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "accounts.api.pagination.ApiPagination",
    "PAGE_SIZE": 50,
    # JSON only: the browsable documentation is the Swagger UI at /api/v1/docs/.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "accounts.api.parsers.BoundedJSONParser",  # JSONParser with a nesting limit
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "accounts.api.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Who a client is for the throttles: REMOTE_ADDR unless trusted proxies are declared
    # (DRF's default, None, believes any X-Forwarded-For a client sends).
    "NUM_PROXIES": env_int("TRUSTED_PROXY_COUNT", 0, minimum=0),
    "DEFAULT_THROTTLE_RATES": {
        # Per user, on every path (pages, API, MCP, admin; accounts/throttles.py): files uploaded,
        # and collections created, re-indexes, retries, subscribing and unsubscribing.
        "uploads": env_rate("API_THROTTLE_UPLOADS", "60/minute"),
        "writes": env_rate("API_THROTTLE_WRITES", "30/minute"),
        # Questions and searches: the API, MCP reads, the chat page and the collection page's search.
        "retrieve": env_rate("API_THROTTLE_RETRIEVE", "60/minute"),
        # Source syncs, per collection owner, the schedule's included: how often a user can make the
        # server fetch a site or a repository again.
        "syncs": env_rate("API_THROTTLE_SYNCS", "60/hour"),
        "auth": env_rate("API_THROTTLE_AUTH", "10/minute"),
        # Per client address (sign-ups; reset e-mails asked for) and per account (reset e-mails sent).
        "signup": env_rate("API_THROTTLE_SIGNUP", "5/hour"),
        "password_reset": env_rate("API_THROTTLE_PASSWORD_RESET", "5/hour"),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Knowledge API",
    "DESCRIPTION": (
        "Collections, documents and retrieval over access-controlled knowledge. "
        "Authenticate with `Authorization: Bearer <token>` (create one at /accounts/tokens/ "
        "or POST /api/v1/auth/token/). Every error has the form "
        '`{"error": {"status", "code", "message", "fields"?}}`.'
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # Served from the drf-spectacular-sidecar package: no CDN at run time.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No persistAuthorization: it would keep a pasted token in the browser's localStorage.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True},
    # Several components have a field named "kind": the sources' gets a name of its own.
    "ENUM_NAME_OVERRIDES": {"SourceKindEnum": "knowledge.models.sources.Source.Kind"},
}
