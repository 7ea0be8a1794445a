"""The application's one error type: raised by services, mapped to a clear 4xx by callers.

Shared by both apps (accounts and knowledge), so it sits below them: knowledge
depends on accounts, never the other way round.
"""


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


class FieldValueError(ValueError):
    """A value given for a named input was refused; the API reports it under ``field``."""

    field = "value"
