"""GET /api/v1/usage/: what the caller uses of each quota, and its limit (null: no limit)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from accounts.api.base import ApiView, errors
from knowledge.quotas import quota_usage_report


def _figure(name: str) -> serializers.Serializer:
    return inline_serializer(
        name=f"Usage{name.title().replace('_', '')}",
        fields={
            "used": serializers.IntegerField(),
            "limit": serializers.IntegerField(allow_null=True, help_text="null: no limit"),
        },
    )


UsageSerializer = inline_serializer(
    name="Usage",
    fields={
        name: _figure(name)
        for name in ("documents", "bytes", "chunks", "questions_today", "llm_tokens_month")
    },
)


class UsageView(ApiView):
    throttle_scope = None

    @extend_schema(
        summary="Your use of each quota and its limit",
        description=(
            "Documents, bytes and chunks count what you uploaded and is stored (documents still "
            "processing and old versions kept included); questions count today's, LLM tokens this "
            "calendar month's. `limit` is null when there is no limit."
        ),
        responses={200: UsageSerializer, **errors()},
    )
    def get(self, request):
        return Response(quota_usage_report(user=request.user))
