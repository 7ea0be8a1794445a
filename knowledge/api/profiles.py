"""/api/v1/profiles/: your rag_focused profiles (operator-provided ones are listed read-only)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from accounts.api.base import MAX_ID, ApiView, StrictSerializer, errors, validated
from accounts.throttles import user_throttle_charge
from knowledge.access import (
    profile_for_reader,
    profile_for_writer,
    profile_is_writable,
    profiles_for_user,
    readable_collections,
)
from knowledge.api.retrieve import overrides_field_validate
from knowledge.models import Profile
from knowledge.parameter_values import effective_config
from knowledge.parameters import PARAMETERS
from knowledge.services.profiles import ignored_overrides, profile_create, profile_delete, profile_update

MAX_PROFILE_COLLECTIONS = 100


class ProfileCollectionSerializer(StrictSerializer):
    collection = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    reranking = serializers.BooleanField(
        default=False,
        help_text="Rerank this collection's results (with the profile's `reranker`, else the LLM).",
    )


class EffectiveValueSerializer(serializers.Serializer):
    value = serializers.JSONField()
    source = serializers.ChoiceField(choices=["locked", "profile", "global"])


EffectiveConfigSerializer = type(
    "EffectiveConfigSerializer",
    (serializers.Serializer,),
    {key: EffectiveValueSerializer(help_text=spec.help_text) for key, spec in PARAMETERS.items()},
)


def config_body(config) -> dict:
    return {key: {"value": item.value, "source": item.source} for key, item in config.items()}


class ProfileSerializer(serializers.ModelSerializer):
    owner = serializers.SerializerMethodField()
    editable = serializers.SerializerMethodField()
    collections = serializers.SerializerMethodField()
    reranker = serializers.SlugRelatedField(
        slug_field="name", read_only=True, help_text="The rerank endpoint; null: the LLM reranks."
    )
    ignored_overrides = serializers.SerializerMethodField()
    effective_config = serializers.SerializerMethodField()

    class Meta:
        model = Profile
        fields = [
            "id",
            "name",
            "tag",
            "profile_type",
            "owner",
            "editable",
            "knowledge_overrides",
            "ignored_overrides",
            "collections",
            "reranker",
            "effective_config",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def _config(self, profile):
        cache = self.context.setdefault("_configs", {})
        if profile.pk not in cache:
            cache[profile.pk] = effective_config(profile=profile)
        return cache[profile.pk]

    def get_owner(self, profile) -> str | None:
        return profile.owner.username if profile.owner_id else None

    def get_editable(self, profile) -> bool:
        return profile_is_writable(user=self.context["request"].user, profile=profile)

    @extend_schema_field(ProfileCollectionSerializer(many=True))
    def get_collections(self, profile) -> list[dict]:
        links = sorted(profile.profile_collections.all(), key=lambda link: link.pk)
        return [{"collection": link.collection_id, "reranking": link.reranking} for link in links]

    @extend_schema_field(serializers.ListField(child=serializers.CharField(), allow_null=True))
    def get_ignored_overrides(self, profile) -> list[str] | None:
        if not self.context.get("with_config", True):
            return None
        return ignored_overrides(overrides=profile.knowledge_overrides or {}, config=self._config(profile))

    @extend_schema_field(EffectiveConfigSerializer(allow_null=True))
    def get_effective_config(self, profile) -> dict | None:
        if not self.context.get("with_config", True):
            return None  # left out of lists: one settings query per profile is not worth it there
        return config_body(self._config(profile))


class ProfileWriteSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    tag = serializers.SlugField(max_length=40)
    knowledge_overrides = serializers.DictField(default=dict)
    collections = serializers.ListField(
        child=ProfileCollectionSerializer(), max_length=MAX_PROFILE_COLLECTIONS, default=list
    )
    reranker = serializers.CharField(
        max_length=100,
        allow_null=True,
        default=None,
        help_text="A rerank endpoint's name (GET /api/v1/rerankers/); null: the LLM.",
    )

    def validate_knowledge_overrides(self, value):
        return overrides_field_validate(value)

    def validate_collections(self, links):
        ids = [link["collection"] for link in links]
        if len(set(ids)) != len(ids):
            raise serializers.ValidationError("a collection is listed twice")
        readable = set(
            readable_collections(self.context["user"]).filter(pk__in=ids).values_list("pk", flat=True)
        )
        missing = [cid for cid in ids if cid not in readable]
        if missing:
            # Missing and unreadable collections get the same message: existence is not revealed.
            raise serializers.ValidationError(f"no such collection: {missing[0]}")
        return links


def _respond(request, profile_id: int, status_code=status.HTTP_200_OK) -> Response:
    profile = profile_for_reader(user=request.user, profile_id=profile_id)
    return Response(ProfileSerializer(profile, context={"request": request}).data, status=status_code)


class ProfileListView(ApiView):
    serializer_class = ProfileSerializer

    @extend_schema(
        summary="Your profiles and the operator's (effective_config is given per profile)",
        responses={200: ProfileSerializer(many=True)},
    )
    def get(self, request):
        profiles = (
            profiles_for_user(request.user)
            .select_related("owner")
            .prefetch_related("profile_collections")
            .order_by("name", "pk")
        )
        return self.paginated(profiles, ProfileSerializer, with_config=False)

    @extend_schema(
        summary="Create a profile",
        request=ProfileWriteSerializer,
        responses={201: ProfileSerializer, **errors(400, 429)},
    )
    def post(self, request):
        data = validated(ProfileWriteSerializer, request.data, context={"user": request.user})
        user_throttle_charge(user=request.user, scope="writes")
        profile = profile_create(owner=request.user, **data)
        return _respond(request, profile.pk, status.HTTP_201_CREATED)


class ProfileDetailView(ApiView):
    serializer_class = ProfileSerializer

    @extend_schema(
        summary="A profile with its effective configuration",
        responses={200: ProfileSerializer, **errors(404)},
    )
    def get(self, request, profile_id: int):
        return _respond(request, profile_id)

    @extend_schema(
        summary="Change your profile (collections, when given, replace the current list)",
        request=ProfileWriteSerializer,
        responses={200: ProfileSerializer, **errors(400, 403, 404)},
    )
    def patch(self, request, profile_id: int):
        profile = profile_for_writer(user=request.user, profile_id=profile_id)
        data = validated(ProfileWriteSerializer, request.data, partial=True, context={"user": request.user})
        profile_update(profile=profile, **data)
        return _respond(request, profile.pk)

    @extend_schema(summary="Delete your profile", responses={204: None, **errors(403, 404)})
    def delete(self, request, profile_id: int):
        profile_delete(profile=profile_for_writer(user=request.user, profile_id=profile_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProfileEffectiveConfigView(ApiView):
    @extend_schema(
        summary="A profile's effective knowledge configuration: {key: {value, source}}",
        responses={200: EffectiveConfigSerializer, **errors(404)},
    )
    def get(self, request, profile_id: int):
        profile = profile_for_reader(user=request.user, profile_id=profile_id)
        return Response(config_body(effective_config(profile=profile)))
