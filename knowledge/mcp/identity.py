"""Who an MCP call acts as: the API token's user over HTTP, the named user over stdio."""

from __future__ import annotations

from typing import Protocol

from django.contrib.auth import get_user_model

from config.errors import KnowledgeError

SCOPE_USER = "knowledge.user"  # where knowledge.mcp.http puts the authenticated user in the ASGI scope


class NotAuthenticatedError(KnowledgeError):
    status_code = 401


class Identity(Protocol):
    def user(self, ctx):
        """The user to act as (called in the worker thread, so it may query the database)."""

    def base_url(self, ctx) -> str:
        """Where the product is served, to make links absolute; "" keeps them relative."""


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
