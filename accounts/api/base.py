"""What every API view shares: authentication, permission, pagination, throttling, errors.

Set on the base class (not only in settings) because DRF binds its defaults
when rest_framework.views is first imported; these views behave the same
whatever order settings and modules load in.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

from accounts.api.auth import BearerTokenAuthentication
from accounts.api.errors import api_exception_handler
from accounts.api.pagination import ApiPagination
from accounts.api.parsers import BoundedJSONParser
from accounts.rate_limits import rate_count
from config.base.validation import MAX_ID as MAX_ID  # re-exported: the API modules import it from here
from config.base.validation import unstorable_location


class ScopedThrottle(ScopedRateThrottle):
    """DRF's scoped throttle, reading REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] at request time,
    counting in one database statement (accounts.rate_limits) instead of a cached history."""

    retry_after: float | None = None

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope) or super().get_rate()

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        allowed, self.retry_after = rate_count(key=self.key, limit=self.num_requests, period=self.duration)
        return allowed

    def wait(self):
        return self.retry_after


class ApiView(GenericAPIView):
    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    renderer_classes = [JSONRenderer]
    parser_classes = [BoundedJSONParser, FormParser, MultiPartParser]
    pagination_class = ApiPagination
    throttle_classes = [ScopedThrottle]
    throttle_scope: str | None = None
    throttle_methods: frozenset[str] = frozenset({"POST"})

    def get_exception_handler(self):
        return api_exception_handler

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        _refuse_nul(request)

    def get_throttles(self):
        if self.throttle_scope is None or self.request.method not in self.throttle_methods:
            return []
        return super().get_throttles()

    def paginated(self, queryset, serializer_class, **context) -> Response:
        page = self.paginate_queryset(queryset)
        data = serializer_class(page, many=True, context={"request": self.request, **context}).data
        return self.get_paginated_response(data)


def _refuse_nul(request) -> None:
    """PostgreSQL cannot hold NUL or a lone surrogate (``"\\ud800"`` in JSON) in text or jsonb: refuse
    either anywhere in the parsed body (keys too), as bad input."""
    if request.method in {"GET", "HEAD", "OPTIONS", "DELETE"}:
        return  # no body to read; the path and query were checked by knowledge.middleware
    found = unstorable_location(request.data, name="body")
    if found:
        where, problem = found
        raise serializers.ValidationError({where: [problem]})


class StrictSerializer(serializers.Serializer):
    """Refuses unknown fields, so a misspelt field is a 400 rather than silently ignored."""

    def to_internal_value(self, data):
        unknown = sorted(set(data.keys()) - set(self.fields)) if hasattr(data, "keys") else []
        if unknown:
            raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


class ErrorDetailSerializer(serializers.Serializer):
    status = serializers.IntegerField()
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(required=False, help_text="Validation errors by field.")
    quota = serializers.CharField(
        required=False, help_text="Over a quota (code quota_exceeded): which one, e.g. documents."
    )
    limit = serializers.IntegerField(required=False, help_text="Over a quota: its value.")
    used = serializers.IntegerField(required=False, help_text="Over a quota: the use before this request.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


_ERROR_TEXT = {
    400: "Invalid input",
    401: "Not authenticated (missing, invalid or revoked token)",
    403: "Readable but not changeable by you",
    404: "Missing, or not visible to you",
    413: "Upload too large, or over a storage quota (documents, bytes, chunks)",
    415: "Unsupported file type",
    429: "Too many requests, or over the questions or LLM tokens quota",
}


def errors(*codes: int, authenticated: bool = True) -> dict:
    """OpenAPI responses for the error statuses an operation can return (401 wherever login is needed)."""
    statuses = sorted({*codes, 401} if authenticated else set(codes))
    return {code: OpenApiResponse(ErrorSerializer, description=_ERROR_TEXT[code]) for code in statuses}


def validated(serializer_class, data, **kwargs) -> dict:
    """The serializer's validated data, or a 400 in the API's error format."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
