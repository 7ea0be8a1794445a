"""POST /api/v1/retrieve/: the retrieval service over a profile's or the given collections."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from accounts.api.base import MAX_ID, ApiView, StrictSerializer, errors, validated
from knowledge.access import question_scope_checked
from knowledge.parameters import ConfigError, validate_overrides
from knowledge.retrieval.service import MAX_QUESTION_CHARS, RetrievalRequest, retrieve

MAX_COLLECTIONS = 100

# The old name, still imported by other API modules; the rule is knowledge.access's.


def overrides_field_validate(value):
    try:
        return validate_overrides(value)
    except ConfigError as exc:
        raise serializers.ValidationError(str(exc)) from None


class ScopeSerializer(StrictSerializer):
    """What to search: a profile, collections, or both (the profile narrowed to them)."""

    profile = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, required=False, help_text="Your profile's id (or an operator one)."
    )
    collections = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        min_length=1,
        max_length=MAX_COLLECTIONS,
        required=False,
        help_text="Collection ids; with a profile, narrows it to these.",
    )


def asked_scope(user, data: dict):
    """The validated request's scope (profile, collections, session), resolved and checked once.

    Every later step takes the result (knowledge.access.QuestionScope); an unreadable id is "not found".
    """
    return question_scope_checked(
        user=user,
        profile=data.get("profile"),
        collection_ids=data.get("collections"),
        session=data.get("session"),
    )


def scope_required(attrs: dict) -> dict:
    """Searching needs a profile or at least one collection."""
    if "profile" not in attrs and "collections" not in attrs:
        raise serializers.ValidationError({"collections": ["give a profile or at least one collection"]})
    return attrs


class RetrieveRequestSerializer(ScopeSerializer):
    question = serializers.CharField(max_length=MAX_QUESTION_CHARS)
    k = serializers.IntegerField(min_value=1, max_value=100, required=False, help_text="Replaces maxDocs.")
    overrides = serializers.DictField(
        required=False, default=dict, help_text='Knowledge parameters for this call, e.g. {"hybrid": false}.'
    )

    def validate_overrides(self, value):
        return overrides_field_validate(value)

    def validate(self, attrs):
        return scope_required(super().validate(attrs))


class RetrievedChunkSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    document = serializers.CharField(help_text="File name.")
    title = serializers.CharField()
    collection_id = serializers.IntegerField()
    source_ref = serializers.CharField(help_text="page=N, slide=N, sheet=NAME, heading=TEXT, operation=...")
    page = serializers.IntegerField(allow_null=True)
    content = serializers.CharField()
    role = serializers.ChoiceField(choices=["primary", "reference"])
    source_number = serializers.IntegerField(allow_null=True, help_text="Its [Source N] in the context.")
    scores = serializers.DictField()


class RetrieveResponseSerializer(serializers.Serializer):
    question = serializers.CharField()
    results = RetrievedChunkSerializer(many=True)
    references = RetrievedChunkSerializer(many=True)
    total_tokens = serializers.IntegerField()
    timings_ms = serializers.DictField(child=serializers.FloatField())
    stats = serializers.DictField()
    answerable = serializers.BooleanField(help_text="Whether the results answer the question (see evidence).")
    answerability = serializers.DictField(
        help_text="The verdict's score, threshold, reason and evidence: best_similarity, margin, coverage, "
        "agreement, absent (share of the question's words found nowhere), relative_similarity (the best "
        "similarity over a typical answer's in these collections), missing_terms (names in the question no "
        "searched document mentions), asked_kind and kind_found (a price, date or duration asked for, and "
        "whether a best passage states one), language and english_only (a German, French or Spanish "
        "question, and whether the embedding models read English only); note, when a closest match that "
        "holds the question overruled a refusal."
    )


class RetrieveView(ApiView):
    serializer_class = RetrieveRequestSerializer
    throttle_scope = "retrieve"

    @extend_schema(
        summary="Retrieve cited chunks for a question",
        request=RetrieveRequestSerializer,
        responses={200: RetrieveResponseSerializer, **errors(400, 404, 429)},
    )
    def post(self, request):
        data = validated(RetrieveRequestSerializer, request.data)
        return Response(retrieve_response(user=request.user, data=data))


def retrieve_response(*, user, data: dict) -> dict:
    """The response body for validated retrieve input (the MCP search tool answers with it too)."""
    asked = asked_scope(user, data)
    context = retrieve(
        user=user,
        request=RetrievalRequest(
            question=data["question"], asked=asked, k=data.get("k"), overrides=data.get("overrides") or {}
        ),
    )
    return {
        "question": context.question,
        "results": [chunk.as_dict() for chunk in context.primary_chunks],
        "references": [chunk.as_dict() for chunk in context.referenced_chunks],
        "total_tokens": context.total_tokens,
        "timings_ms": context.timings_ms,
        "stats": context.stats,
        "answerable": context.answerable,
        "answerability": context.answerability.as_dict() if context.answerability else {},
    }
