"""The HTTP side of SCIM: bearer token check, JSON in, ``application/scim+json`` out, errors as
SCIM error bodies, and the audit context every SCIM event is recorded in.

Never a session: a SCIM request is authenticated by its ``Authorization: Bearer`` header alone
(the views are CSRF-exempt for that reason, and never read ``request.user``). A missing or wrong
token is answered 401 and recorded (``scim.refused`` with the reason); refusals are counted per
client address against the "auth" rate (API_THROTTLE_AUTH), and past it the answer is 429 with
no further record, so that nobody without a token can fill the audit log.
"""

from __future__ import annotations

import functools
import json
import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError, transaction
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from accounts.audit import AuditSubject, audit_context, audit_record
from accounts.client_address import client_address
from accounts.models import AuditEvent
from accounts.scim.errors import ScimError
from accounts.scim.tokens import scim_token_authenticate
from accounts.throttles import throttle_charge
from config.base.errors import KnowledgeError, RateLimitedError

logger = logging.getLogger(__name__)

CONTENT_TYPE = "application/scim+json"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
BASE_PATH = "/scim/v2/"
MAX_JSON_DEPTH = 20


def scim_response(body: dict | None, status: int = 200, **headers) -> HttpResponse:
    if body is None:
        response = HttpResponse(status=status)
    else:
        response = HttpResponse(json.dumps(body), status=status, content_type=CONTENT_TYPE)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def location(path: str) -> str:
    """An absolute address under /scim/v2/, from the public address, never the request's Host header."""
    return f"{settings.KNOWLEDGE_PUBLIC_URL.rstrip('/')}{BASE_PATH}{path}"


def request_json(request) -> dict:
    """The body as a JSON object; ScimError 400 for anything else."""
    try:
        body = json.loads(request.body or b"null")
    except RequestDataTooBig as exc:
        raise ScimError(413, "the request body is too large") from exc
    except (ValueError, RecursionError) as exc:
        raise ScimError(400, "the body is not JSON", "invalidSyntax") from exc
    if not isinstance(body, dict):
        raise ScimError(400, "the body must be a JSON object", "invalidSyntax")
    if _depth(body) > MAX_JSON_DEPTH:
        raise ScimError(400, "the body is nested too deeply", "invalidSyntax")
    return body


def _depth(value, level: int = 0) -> int:
    if level > MAX_JSON_DEPTH:
        return level
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return max((_depth(item, level + 1) for item in value), default=level + 1)
    return level


def scim_endpoint(view):
    """Wraps a SCIM view: ``view(request, token, *args)`` runs only with a valid token, inside the
    SCIM audit context; a ScimError it raises becomes the SCIM error answer and is recorded."""

    @csrf_exempt
    @functools.wraps(view)
    def endpoint(request, *args, **kwargs):
        address = client_address(request)[:64]
        token = scim_token_authenticate(_bearer(request))
        if token is None:
            return _unauthenticated(request, address)
        label = f"scim:{token.source}/{token.name}"
        with audit_context(channel=AuditEvent.Channel.SCIM, address=address, actor_label=label):
            try:
                return view(request, token, *args, **kwargs)
            except ScimError as error:
                return _refused(request, error, token.source)
            except KnowledgeError as error:  # a service's own check (text with NUL ...)
                return _refused(request, ScimError(400, str(error), "invalidValue"), token.source)
            except IntegrityError:  # a parallel request made the same name first
                conflict = ScimError(
                    409, "a user or group of this name was made at the same time", "uniqueness"
                )
                return _refused(request, conflict, token.source)

    return endpoint


def _refused(request, error: ScimError, source: str) -> HttpResponse:
    _record_refusal(request, error, source)
    return scim_response(error.body(), error.status)


def _bearer(request) -> str:
    parts = request.headers.get("Authorization", "").split()
    return parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else ""


def _unauthenticated(request, address: str) -> HttpResponse:
    reason = "no bearer token" if not _bearer(request) else "invalid or revoked token"
    try:
        throttle_charge(scope="auth", ident=f"scim_{address}")
    except RateLimitedError as error:
        limited = ScimError(429, str(error))
        return scim_response(limited.body(), 429, Retry_After=error.retry_after_header)
    with audit_context(channel=AuditEvent.Channel.SCIM, address=address), transaction.atomic():
        audit_record(
            action="scim.refused",
            obj=AuditSubject(object_type="scim", object_repr=f"{request.method} {request.path}"[:200]),
            changes={"reason": [None, reason], "status": [None, 401]},
        )
    error = ScimError(401, f"authentication required: {reason}")
    return scim_response(error.body(), 401, WWW_Authenticate='Bearer realm="scim"')


def _record_refusal(request, error: ScimError, source: str) -> None:
    """A refused request by a valid token, recorded after its transaction rolled back. A read of
    something missing is a question answered (providers look users up before creating them)."""
    if request.method == "GET" and error.status == 404:
        return
    with transaction.atomic():
        audit_record(
            action="scim.refused",
            obj=AuditSubject(object_type="scim", object_repr=f"{request.method} {request.path}"[:200]),
            changes={
                "reason": [None, error.detail],
                "status": [None, error.status],
                "source": [None, source],
            },
        )


def list_response(resources: list[dict], *, total: int, start: int) -> dict:
    return {
        "schemas": [LIST_SCHEMA],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


MAX_PAGE_SIZE = 200
DEFAULT_PAGE_SIZE = 100
MAX_START_INDEX = 1_000_000_000  # past any real list; PostgreSQL's OFFSET is a bigint


def paging(request) -> tuple[int, int]:
    """(startIndex, count) of a list request: 1-based, a start below 1 read as 1 (RFC 7644 3.4.2.4),
    the count capped at MAX_PAGE_SIZE."""
    start = _integer(request.GET.get("startIndex"), "startIndex", 1)
    count = _integer(request.GET.get("count"), "count", DEFAULT_PAGE_SIZE)
    return min(max(start, 1), MAX_START_INDEX), min(max(count, 0), MAX_PAGE_SIZE)


def _integer(text: str | None, name: str, default: int) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError as exc:
        raise ScimError(400, f"{name} must be a whole number", "invalidValue") from exc


def excluded_attributes(request) -> set[str]:
    raw = request.GET.get("excludedAttributes", "")
    return {name.strip().lower() for name in raw.split(",") if name.strip()}


def page_of(queryset, request, represent) -> dict:
    """One page of ``queryset`` (in id order) as a ListResponse of ``represent(object)``."""
    start, count = paging(request)
    total = queryset.count()
    objects = list(queryset.order_by("pk")[start - 1 : start - 1 + count]) if count else []
    return list_response([represent(obj) for obj in objects], total=total, start=start)
