"""/api/v1/collections/{id}/shares/: the teams (Django groups) a collection you manage is shared with."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from accounts.api.base import MAX_ID, ApiView, StrictSerializer, errors, validated
from accounts.throttles import user_throttle_charge
from knowledge.access import collection_for_manager
from knowledge.models import CollectionShare
from knowledge.services.teams import collection_share_remove, collection_share_set, collection_shares

ACCESS_CHOICES = [("read", "Members read it"), ("write", "Members also upload, delete and re-index")]


class ShareSerializer(serializers.ModelSerializer):
    group = serializers.IntegerField(source="group_id", read_only=True)
    group_name = serializers.CharField(source="group.name", read_only=True)
    access = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = CollectionShare
        fields = ["group", "group_name", "access", "created_at", "created_by"]
        read_only_fields = fields

    def get_access(self, share) -> str:
        return "write" if share.can_write else "read"


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string", "maxLength": 150}]})
class GroupField(serializers.Field):
    """A group's id (a JSON number) or its exact name (a JSON string)."""

    default_error_messages = {"invalid": "give a group id (a number) or a group name (text)"}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        if isinstance(data, int):
            if not 1 <= data <= MAX_ID:
                self.fail("invalid")
            return data
        name = data.strip()
        if not name or len(name) > 150:
            self.fail("invalid")
        return name


class ShareRequestSerializer(StrictSerializer):
    group = GroupField(help_text="A group you belong to (staff: any group), by id (number) or name (text).")
    access = serializers.ChoiceField(choices=ACCESS_CHOICES, default="read")


class CollectionSharesView(ApiView):
    serializer_class = ShareSerializer

    @extend_schema(
        summary="Teams a collection you manage is shared with",
        responses={200: ShareSerializer(many=True), **errors(403, 404)},
    )
    def get(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        return self.paginated(collection_shares(collection=collection), ShareSerializer)

    @extend_schema(
        summary="Share a collection you manage with a team (201), or change a team's access (200)",
        request=ShareRequestSerializer,
        responses={201: ShareSerializer, 200: ShareSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        data = validated(ShareRequestSerializer, request.data)
        user_throttle_charge(user=request.user, scope="writes")
        share, created = collection_share_set(
            collection=collection, user=request.user, group=data["group"], can_write=data["access"] == "write"
        )
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(ShareSerializer(share).data, code)


class CollectionShareDetailView(ApiView):
    serializer_class = ShareSerializer

    @extend_schema(
        summary="Stop sharing a collection you manage with a team (its members lose access at once)",
        responses={204: None, **errors(403, 404)},
    )
    def delete(self, request, collection_id: int, group_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        collection_share_remove(collection=collection, group_id=group_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
