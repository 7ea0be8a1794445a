"""GET /api/v1/usage/: what the caller uses of each quota, and its limit (null: no limit)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from accounts.api.base import ApiView, errors
from knowledge.quotas import quota_usage_report


class QuotaFigureSerializer(serializers.Serializer):
    used = serializers.IntegerField()
    limit = serializers.IntegerField(allow_null=True, help_text="null: no limit")


class UsageSerializer(serializers.Serializer):
    documents = QuotaFigureSerializer(help_text="Documents you uploaded that are stored.")
    bytes = QuotaFigureSerializer(help_text="Bytes of their originals.")
    chunks = QuotaFigureSerializer(help_text="Chunks stored for them.")
    questions_today = QuotaFigureSerializer(help_text="Questions asked today.")
    llm_tokens_month = QuotaFigureSerializer(help_text="LLM tokens spent this calendar month.")


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
