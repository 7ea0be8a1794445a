"""POST /api/v1/query/ (answer with citations; SSE with Accept: text/event-stream) and sessions."""

from __future__ import annotations

import json

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from accounts.api.base import MAX_ID, ApiView, StrictSerializer, errors, validated
from knowledge.access import chat_session_for_owner
from knowledge.api.retrieve import ScopeSerializer, asked_scope
from knowledge.chat import (
    MAX_TITLE_CHARS,
    chat_ask,
    chat_session_delete,
    chat_session_rename,
    chat_stream,
    event_stream_response,
    sse_stream,
    turn_summary,
)
from knowledge.models import ChatSession
from knowledge.retrieval.service import MAX_QUESTION_CHARS


class QueryRequestSerializer(ScopeSerializer):
    question = serializers.CharField(max_length=MAX_QUESTION_CHARS)
    session = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, required=False, help_text="Continue this session (follow-ups)."
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if not ({"profile", "collections", "session"} & set(attrs)):
            raise serializers.ValidationError(
                {"profile": ["give a profile, collections, or a session to continue"]}
            )
        return attrs


class QueryResponseSerializer(serializers.Serializer):
    answer = serializers.CharField()
    mode = serializers.ChoiceField(choices=["llm", "extractive", "no_results"])
    citations = serializers.ListField(child=serializers.DictField())
    dropped_citations = serializers.IntegerField()
    tokens = serializers.DictField()
    events = serializers.ListField(child=serializers.CharField())
    session = serializers.IntegerField()
    sources = serializers.ListField(
        child=serializers.DictField(),
        help_text="The passages the answer's [Source N] number, in that order: the N-th is [Source N].",
    )


class EventStreamRenderer(BaseRenderer):
    """Lets content negotiation accept text/event-stream; errors then arrive as one ``error`` event."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


class QueryView(ApiView):
    serializer_class = QueryRequestSerializer
    throttle_scope = "retrieve"
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        summary="Answer a question from your documents, with citations",
        description="With `Accept: text/event-stream` the events and the answer text stream as they happen.",
        request=QueryRequestSerializer,
        responses={200: QueryResponseSerializer, **errors(400, 404, 429)},
    )
    def post(self, request):
        data = validated(QueryRequestSerializer, request.data)
        # The scope is resolved once, before anything streams (knowledge.access): unreadable is "not found".
        user, question, asked = request.user, data["question"], asked_scope(request.user, data)
        if "text/event-stream" in request.headers.get("Accept", ""):
            stream = chat_stream(user=user, question=question, asked=asked)
            return event_stream_response(sse_stream(stream), request=request)
        return Response(query_response(chat_ask(user=user, question=question, asked=asked)))


def query_response(turn) -> dict:
    """The response body for an answered turn (the MCP answer tools answer with it too)."""
    return {**turn_summary(turn), "sources": turn.retrieved}


class SessionSerializer(serializers.ModelSerializer):
    profile = serializers.IntegerField(source="profile_id", allow_null=True)
    turns = serializers.IntegerField(source="turn_count")

    class Meta:
        model = ChatSession
        fields = [
            "id",
            "title",
            "profile",
            "collection_ids",
            "input_tokens",
            "output_tokens",
            "turns",
            "created_at",
            "updated_at",
        ]


class SessionListView(ApiView):
    serializer_class = SessionSerializer
    throttle_scope = None

    @extend_schema(summary="Your chat sessions", responses={200: SessionSerializer(many=True), **errors()})
    def get(self, request):
        from django.db.models import Count

        sessions = ChatSession.objects.filter(user=request.user).annotate(turn_count=Count("turns"))
        return self.paginated(sessions.order_by("-updated_at"), SessionSerializer)


class SessionRenameSerializer(StrictSerializer):
    title = serializers.CharField(max_length=MAX_TITLE_CHARS, help_text="The session's new title.")


class SessionDetailView(ApiView):
    serializer_class = SessionSerializer
    throttle_scope = None

    @extend_schema(
        summary="Rename a session",
        request=SessionRenameSerializer,
        responses={200: dict, **errors(400, 404)},
    )
    def patch(self, request, session_id: int):
        session = chat_session_for_owner(user=request.user, session_id=session_id)
        data = validated(SessionRenameSerializer, request.data)
        session = chat_session_rename(session=session, title=data["title"])
        return Response({"id": session.pk, "title": session.title})

    @extend_schema(summary="Delete a session and its turns", responses={204: None, **errors(404)})
    def delete(self, request, session_id: int):
        session = chat_session_for_owner(user=request.user, session_id=session_id)
        chat_session_delete(session=session)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(summary="A session with its turns", responses={200: dict, **errors(404)})
    def get(self, request, session_id: int):
        session = chat_session_for_owner(user=request.user, session_id=session_id)
        turns = [turn_summary(turn) for turn in session.turns.order_by("index")]
        return Response(
            {
                "id": session.pk,
                "title": session.title,
                "profile": session.profile_id,
                "input_tokens": session.input_tokens,
                "output_tokens": session.output_tokens,
                "turns": turns,
            }
        )
