"""The MCP server over Streamable HTTP at /mcp/, next to Django in one ASGI application.

Requests are authenticated like the REST API's: ``Authorization: Bearer
<API token>``, checked by accounts.api_tokens on every request, so a revoked
token stops working at once; an operator still on the default password is
refused as the API refuses it, and so is an account MFA_REQUIRED holds until it
adds a second factor (Django's middleware never sees these requests).
The SDK runs stateless (every POST stands alone, authenticated by its own
token): there is no server-side session another token could reuse, and any
number of server processes can share the load. Answers are plain JSON
responses. Host names are checked against ALLOWED_HOSTS as Django does; the
SDK's own DNS-rebinding guard (for unauthenticated local servers) is off
because a browser page cannot borrow a Bearer token.

``with_mcp(django_app)`` routes /mcp and /mcp/ here and everything else to
Django; ASGI lifespan events go to the SDK's app, whose startup runs the
Streamable HTTP session manager (Django's handler has no lifespan support).
"""

from __future__ import annotations

import json
import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from accounts.api.errors import error_body
from accounts.api_tokens import token_authenticate
from accounts.policy import account_hold
from config.base.errors import DATABASE_UNAVAILABLE, database_retry_after_header, database_unavailable
from knowledge.mcp.identity import SCOPE_USER, TokenIdentity
from knowledge.mcp.server import build_server

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp/"
CHALLENGE = b'Bearer realm="mcp"'


def mcp_http_app() -> ASGIApp:
    """The SDK's Streamable HTTP app for the knowledge tools, behind token authentication."""
    server = build_server(TokenIdentity())
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return TokenAuthMiddleware(app)


def with_mcp(django_app: ASGIApp, mcp_app: ASGIApp | None = None) -> ASGIApp:
    """One ASGI application: /mcp/ (and lifespan) to the MCP app, the rest to Django."""
    mcp_app = mcp_app or mcp_http_app()

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await mcp_app(scope, receive, send)
        elif scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH.rstrip("/"):
            await mcp_app({**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}, receive, send)
        else:
            await django_app(scope, receive, send)

    return application


class TokenAuthMiddleware:
    """Refuses a request without a valid, unrevoked API token (401, the API's error body), and an
    operator's while it still has the default password (403, as the API answers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not _host_allowed(scope):
            await _refuse(send, 400, "invalid", "this host name is not served here (ALLOWED_HOSTS)")
            return
        secret, problem = _bearer_secret(scope)
        user, held = None, None
        try:
            if not problem:
                user, held = await sync_to_async(_authenticate, thread_sensitive=False)(secret)
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            logger.warning("MCP request refused: database unreachable: %s", exc)
            await _refuse(send, 503, "unavailable", DATABASE_UNAVAILABLE)
            return
        if user is None:
            await _refuse(send, 401, "not_authenticated", problem or "invalid or revoked token")
            return
        if held:
            await _refuse(send, 403, "permission_denied", held)
            return
        await self.app({**scope, SCOPE_USER: user}, receive, send)


def _authenticate(secret: str) -> tuple:
    """(the token's user or None, why the account is held at a set-up page or None: accounts.policy)."""
    close_old_connections()
    try:
        user = token_authenticate(secret)
        held = account_hold(user) if user is not None else None
        return user, held.message if held else None
    finally:
        close_old_connections()


def _header(scope: Scope, name: bytes) -> bytes:
    return next((value for key, value in scope["headers"] if key.lower() == name), b"")


def _bearer_secret(scope: Scope) -> tuple[str, str]:
    """The token in ``Authorization: Bearer <token>``, or a message saying what is wrong."""
    parts = _header(scope, b"authorization").split()
    if not parts or parts[0].lower() != b"bearer":
        return "", "authentication required: send 'Authorization: Bearer <API token>'"
    if len(parts) != 2:
        return "", "the Authorization header must be 'Bearer <token>'"
    try:
        return parts[1].decode("ascii"), ""
    except UnicodeDecodeError:
        return "", "invalid or revoked token"


def _host_allowed(scope: Scope) -> bool:
    host = _header(scope, b"host").decode("latin-1")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS or (["localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    return bool(domain) and validate_host(domain, allowed)


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(status, code, message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", CHALLENGE))
    if status == 503:
        headers.append((b"retry-after", database_retry_after_header().encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
