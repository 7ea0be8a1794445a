"""The application's one error type: raised by services, mapped to a clear 4xx by callers.

Shared by both apps (accounts and knowledge), so it sits below them: knowledge
depends on accounts, never the other way round.
"""

import math


class KnowledgeError(Exception):
    """Bad input or a refused action; the message is written for the user."""

    status_code = 400


class NotAuthenticatedError(KnowledgeError):
    """Credentials that do not sign anyone in (a wrong user name or password)."""

    status_code = 401


class NotFoundError(KnowledgeError):
    """Missing, or not visible to this user: the two are never told apart."""

    status_code = 404


class UploadTooLargeError(KnowledgeError):
    status_code = 413


class UnsupportedMediaError(KnowledgeError):
    status_code = 415


class ForbiddenError(KnowledgeError):
    """Visible but not changeable by this user."""

    status_code = 403


class RateLimitedError(KnowledgeError):
    """Over a request rate (accounts.throttles); ``retry_after`` is the wait in seconds."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after

    @property
    def retry_after_header(self) -> str:
        """Whole seconds, rounded up: a client that waits this long is counted again."""
        return str(math.ceil(self.retry_after))


class QuotaExceededError(KnowledgeError):
    """Over a per-user quota (knowledge.quotas): 413 for what is stored, 429 for questions and tokens.

    ``quota`` names the limit, ``limit`` is its value and ``used`` the use before this request;
    the API's error body carries the three for programs.
    """

    STORAGE_QUOTAS = frozenset({"documents", "bytes", "chunks"})

    def __init__(self, message: str, *, quota: str, limit: int, used: int):
        super().__init__(message)
        self.quota, self.limit, self.used = quota, limit, used
        self.status_code = 413 if quota in self.STORAGE_QUOTAS else 429

    @property
    def error_fields(self) -> dict:
        return {"quota": self.quota, "limit": self.limit, "used": self.used}


class FieldValueError(ValueError):
    """A value given for a named input was refused; the API reports it under ``field``."""

    field = "value"


# What every surface (pages, API, MCP) answers while the database cannot be reached.
DATABASE_UNAVAILABLE = "the database cannot be reached; try again shortly"


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` means the database is unreachable (or dropped the connection), not a bug.

    Django raises OperationalError when a connection cannot be made (refused, timed
    out, no pooled connection within DB_CONNECT_TIMEOUT) and InterfaceError on a
    connection the server closed under it.
    """
    from django.db import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError)


def database_retry_after_header() -> str:
    """The Retry-After of a 503 sent while the database cannot be reached (DB_RETRY_AFTER_SECONDS)."""
    from django.conf import settings

    return str(settings.DB_RETRY_AFTER_SECONDS)
