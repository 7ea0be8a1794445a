"""One error format for the whole API: {"error": {"status", "code", "message", "fields"?}}.

An error that carries figures for programs (a quota's ``quota``, ``limit`` and ``used``, as
``error_fields``) has them in the same object, beside the message.

DRF's own exceptions, the application's KnowledgeError (with its status
code), refused field values (FieldValueError) and Django's request errors all pass through
api_exception_handler; unknown URLs under /api/v1/ get api_not_found.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import JsonResponse
from django.urls import Resolver404, resolve
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from config.base.errors import (
    DATABASE_UNAVAILABLE,
    FieldValueError,
    KnowledgeError,
    RateLimitedError,
    database_retry_after_header,
    database_unavailable,
)

logger = logging.getLogger(__name__)

CODES_BY_STATUS = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "too_large",
    415: "unsupported_media_type",
    429: "throttled",
    500: "server_error",
}


class ApplicationError(exceptions.APIException):
    """A KnowledgeError (or similar) carried through DRF's handler with its own status."""

    def __init__(self, message: str, status_code: int, extra: dict | None = None):
        self.status_code = status_code
        self.extra = extra or {}
        super().__init__(detail=message, code=CODES_BY_STATUS.get(status_code, "error"))


def error_body(status_code: int, code: str, message: str, fields=None) -> dict:
    error = {"status": status_code, "code": code, "message": message}
    if fields:
        error["fields"] = fields
    return {"error": error}


def api_exception_handler(exc, context):
    exc = _as_api_exception(exc)
    response = drf_exception_handler(exc, context)
    if response is None and database_unavailable(exc):
        logger.warning("database unreachable in %s: %s", context.get("view").__class__.__name__, exc)
        set_rollback()
        response = Response(error_body(503, "unavailable", DATABASE_UNAVAILABLE), status=503)
        response["Retry-After"] = database_retry_after_header()
        return response
    if response is None:
        if settings.DEBUG:
            return None  # let Django show its debug page
        logger.error("unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
        set_rollback()
        return Response(
            error_body(500, "server_error", "something went wrong on our side; the error was logged"),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    response.data = _body_for(exc, response.status_code)
    if response.status_code == status.HTTP_401_UNAUTHORIZED and "WWW-Authenticate" not in response:
        response["WWW-Authenticate"] = 'Bearer realm="api"'  # a 401 names its challenge (RFC 9110)
    return response


def error_body_for(exc: Exception) -> dict | None:
    """The API's error body for an application or validation error; None for anything else (a bug).

    For callers outside DRF's request cycle (the MCP tools), so their errors read exactly as the API's.
    """
    exc = _as_api_exception(exc)
    if not isinstance(exc, exceptions.APIException):
        return None
    return _body_for(exc, exc.status_code)


def _as_api_exception(exc):
    if isinstance(exc, RateLimitedError):  # DRF's own, so the response carries Retry-After
        return exceptions.Throttled(wait=exc.retry_after, detail=str(exc))
    if isinstance(exc, KnowledgeError):
        return ApplicationError(str(exc), exc.status_code, getattr(exc, "error_fields", None))
    if isinstance(exc, FieldValueError):
        return exceptions.ValidationError({exc.field: [str(exc)]})
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, RequestDataTooBig):
        return ApplicationError("the request body is too large", 413)
    if isinstance(exc, SuspiciousOperation):
        return ApplicationError("the request could not be read", 400)
    return exc


def _body_for(exc, status_code: int) -> dict:
    if isinstance(exc, exceptions.ValidationError):
        return _validation_body(exc.detail)
    detail = getattr(exc, "detail", "")
    code = getattr(detail, "code", None) or CODES_BY_STATUS.get(status_code, "error")
    if isinstance(exc, ApplicationError):
        code = "quota_exceeded" if "quota" in exc.extra else CODES_BY_STATUS.get(status_code, "error")
        return {"error": error_body(status_code, code, str(detail))["error"] | exc.extra}
    return error_body(status_code, code, str(detail))


def _validation_body(detail) -> dict:
    if isinstance(detail, dict):
        summary = "; ".join(f"{field}: {_first_message(errors)}" for field, errors in detail.items())
        return error_body(400, "invalid", summary or "invalid input", fields=detail)
    messages = [str(item) for item in detail] if isinstance(detail, list) else [str(detail)]
    return error_body(400, "invalid", " ".join(messages) or "invalid input")


def _first_message(errors) -> str:
    """The first message in a (possibly nested) DRF error structure."""
    while isinstance(errors, (list, dict)) and errors:
        errors = next(iter(errors.values())) if isinstance(errors, dict) else errors[0]
    return str(errors)


def api_not_found(request, *args, **kwargs):
    """Unknown URLs under the API answer in the API's error format, not with an HTML page."""
    message = f"no API endpoint at {request.path}"
    if not request.path.endswith("/") and _resolves(request.path + "/", request):
        message += f"; did you mean {request.path}/ ?"
    return JsonResponse(error_body(404, "not_found", message), status=404)


def _resolves(path: str, request) -> bool:
    try:
        return resolve(path, urlconf=getattr(request, "urlconf", None)).func is not api_not_found
    except Resolver404:
        return False
