"""Who an MCP call acts as: the API token's user over HTTP, the named user over stdio."""

from __future__ import annotations

from typing import Protocol

from django.contrib.auth import get_user_model

from accounts.client_address import client_address
from config.base.errors import KnowledgeError

SCOPE_USER = "knowledge.user"  # where knowledge.mcp.http puts the authenticated user in the ASGI scope


class NotAuthenticatedError(KnowledgeError):
    status_code = 401


class Identity(Protocol):
    def user(self, ctx):
        """The user to act as (called in the worker thread, so it may query the database)."""

    def base_url(self, ctx) -> str:
        """Where the product is served, to make links absolute; "" keeps them relative."""

    def address(self, ctx) -> str:
        """The caller's network address, for the audit log ("" when the call did not come over a network)."""


class TokenIdentity:
    """HTTP: the user whose token authenticated the request carrying this call."""

    def user(self, ctx):
        request = ctx.request_context.request
        user = request.scope.get(SCOPE_USER) if request is not None else None
        if user is None:  # the HTTP app authenticates first; this is a second lock on the door
            raise NotAuthenticatedError("not authenticated")
        return user

    def base_url(self, ctx) -> str:
        request = ctx.request_context.request
        return str(request.base_url).rstrip("/") if request is not None else ""

    def address(self, ctx) -> str:
        """By the rule pages and the API use (accounts.client_address): forwarded headers count only
        as far as TRUSTED_PROXY_COUNT says."""
        request = ctx.request_context.request
        return client_address(_AsgiMeta(request.scope)) if request is not None else ""


class NamedUserIdentity:
    """stdio: the user named when the server was started, re-read per call (deactivation applies at once)."""

    def __init__(self, *, user_id: int, base_url: str = "") -> None:
        self.user_id = user_id
        self._base_url = base_url

    def user(self, ctx):
        user = get_user_model().objects.filter(pk=self.user_id, is_active=True).first()
        if user is None:
            raise NotAuthenticatedError("this user no longer exists or is not active")
        return user

    def base_url(self, ctx) -> str:
        return self._base_url

    def address(self, ctx) -> str:
        return ""  # stdio: the caller is a local process


class _AsgiMeta:
    """An ASGI scope's client address and forwarding header, where client_address reads them (META)."""

    def __init__(self, scope: dict) -> None:
        client = scope.get("client") or ("", 0)
        forwarded = next(
            (value for key, value in scope.get("headers", []) if key.lower() == b"x-forwarded-for"), None
        )
        self.META = {"REMOTE_ADDR": client[0]}
        if forwarded is not None:
            self.META["HTTP_X_FORWARDED_FOR"] = forwarded.decode("latin-1")
