"""POST /api/v1/sessions/{id}/turns/{n}/feedback/: rate an answer, thumbs up or down, with a comment."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from accounts.api.base import ApiView, StrictSerializer, errors, validated
from knowledge.access import chat_turn_for_owner
from knowledge.models import ChatTurn
from knowledge.services.feedback import MAX_COMMENT_CHARS, turn_feedback_set


class FeedbackRequestSerializer(StrictSerializer):
    rating = serializers.ChoiceField(choices=ChatTurn.Rating.values, help_text='"up" or "down".')
    comment = serializers.CharField(
        max_length=MAX_COMMENT_CHARS, required=False, allow_blank=True, help_text="Optional: why."
    )


class FeedbackSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    turn = serializers.IntegerField(help_text="The turn's position in the session, from 0.")
    rating = serializers.CharField()
    comment = serializers.CharField()
    rated_at = serializers.DateTimeField()


def feedback_body(turn: ChatTurn) -> dict:
    return {
        "session": turn.session_id,
        "turn": turn.index,
        "rating": turn.feedback_rating,
        "comment": turn.feedback_comment,
        "rated_at": turn.feedback_at,
    }


class TurnFeedbackView(ApiView):
    serializer_class = FeedbackRequestSerializer
    throttle_scope = None

    @extend_schema(
        summary="Rate an answer (thumbs up or down) with an optional comment",
        description="Rating the same turn again replaces its rating. Only your own sessions' turns.",
        request=FeedbackRequestSerializer,
        responses={200: FeedbackSerializer, **errors(400, 404)},
    )
    def post(self, request, session_id: int, turn_index: int):
        turn = chat_turn_for_owner(user=request.user, session_id=session_id, turn_index=turn_index)
        data = validated(FeedbackRequestSerializer, request.data)
        turn = turn_feedback_set(turn=turn, rating=data["rating"], comment=data.get("comment", ""))
        return Response(FeedbackSerializer(feedback_body(turn)).data)
