"""The application's one error type: raised by services, mapped to a clear 4xx by callers.

Shared by both apps (accounts and knowledge), so it sits below them: knowledge
depends on accounts, never the other way round.
"""

import math


class KnowledgeError(Exception):
    """Bad input or a refused action; the message is written for the user."""

    status_code = 400


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
