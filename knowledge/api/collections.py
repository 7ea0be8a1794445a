"""/api/v1/collections/: list, create, read, change and delete collections."""

from __future__ import annotations

from django.db.models import OuterRef, Q, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from accounts.api.base import ApiView, StrictSerializer, errors, validated
from accounts.throttles import user_throttle_charge
from config.base.errors import ForbiddenError, NotFoundError
from knowledge.access import (
    collection_for_manager,
    collection_is_manageable,
    collection_team_access,
    listed_collections,
    readable_collections,
)
from knowledge.api.releases import ReleaseSerializer, undecided_release_row
from knowledge.clients.embedding_registry import EMBEDDING_MODELS
from knowledge.models import Chunk, Collection, Document
from knowledge.services.collections import collection_create, collection_delete, collection_update
from knowledge.services.queries import count_subquery
from knowledge.services.sharing import (
    collection_link_open,
    collection_link_preview,
    collection_link_rotate,
    collection_share_path,
)

VISIBILITY = Collection.Visibility


def with_counts(queryset: QuerySet[Collection]) -> QuerySet[Collection]:
    """Document and (searchable) chunk counts as subqueries: one query for a whole page."""
    documents = Document.objects.filter(collection=OuterRef("pk"))
    chunks = Chunk.objects.filter(
        collection=OuterRef("pk"),
        chunk_profile=OuterRef("chunk_profile"),
        embedding_model=OuterRef("embedding_model"),
    )
    return queryset.select_related("owner", "chunk_profile", "pending_chunk_profile").annotate(
        document_count=count_subquery(documents, group_by="collection"),
        chunk_count=count_subquery(chunks, group_by="collection"),
    )


def collection_for_api_reader(*, user, collection_id) -> Collection:
    """A readable collection (knowledge.access decides) with what the API shows: counts, owner, teams."""
    readable = collection_team_access(readable_collections(user), user=user)
    collection = with_counts(readable).filter(pk=collection_id).first()
    if collection is None:
        raise NotFoundError("no such collection")
    return collection


# What every view of a collection shows first (the API's collections and the marketplace's listings).
COLLECTION_FIELDS = ["id", "name", "description", "tags", "visibility"]


# A serializer's ``owner`` method field: the owner's user name, None for an admin-owned collection.
# (A comment, not a docstring: drf-spectacular would take a docstring as the serializers' description.)
class OwnerName:
    def get_owner(self, collection) -> str | None:
        return collection.owner.username if collection.owner_id else None


class CollectionSerializer(OwnerName, serializers.ModelSerializer):
    owner = serializers.SerializerMethodField()
    is_admin_owned = serializers.BooleanField(read_only=True)
    can_write = serializers.SerializerMethodField(
        help_text="You may upload, delete and re-index its documents and add, sync and remove its sources: "
        "the owner (staff for admin-owned) and members of a team it is shared with for writing."
    )
    can_manage = serializers.SerializerMethodField(
        help_text="You may change its settings, listing, share link, subscriptions and team shares, "
        "or delete it: the owner (staff for admin-owned) only."
    )
    teams = serializers.SerializerMethodField(
        help_text="Your teams (groups) it is shared with, how you reach it as a member: "
        '[{"id", "name", "access": "read" or "write"}]; empty when none.'
    )
    document_count = serializers.IntegerField(read_only=True)
    chunk_count = serializers.IntegerField(read_only=True, help_text="Searchable chunks (current profile).")
    chunk_profile = serializers.CharField(source="chunk_profile.name", read_only=True)
    pending_chunk_profile = serializers.CharField(
        source="pending_chunk_profile.name", read_only=True, allow_null=True, default=None
    )
    share_token = serializers.SerializerMethodField(
        help_text="Owners only (null for others): the secret of the share link."
    )
    share_url = serializers.SerializerMethodField(
        help_text="Owners only: the share link; whoever opens it reads the collection while it is unlisted."
    )

    class Meta:
        model = Collection
        fields = [
            *COLLECTION_FIELDS,
            "listed",
            "owner",
            "is_admin_owned",
            "can_write",
            "can_manage",
            "teams",
            "document_count",
            "chunk_count",
            "chunk_profile",
            "pending_chunk_profile",
            "embedding_model",
            "pending_embedding_model",
            "reindex_error",
            "share_token",
            "share_url",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_can_manage(self, collection) -> bool:
        return collection_is_manageable(user=self.context["request"].user, collection=collection)

    def get_can_write(self, collection) -> bool:
        teams = self.get_teams(collection)
        return self.get_can_manage(collection) or any(team["access"] == "write" for team in teams)

    def get_teams(self, collection) -> list[dict]:
        if not hasattr(collection, "team_access"):  # read once per collection, kept for the other fields
            one = collection_team_access(
                Collection.objects.filter(pk=collection.pk), user=self.context["request"].user
            )
            collection.team_access = getattr(one.first(), "team_access", [])
        rows = collection.team_access or []
        return [
            {"id": r["id"], "name": r["name"], "access": "write" if r["can_write"] else "read"} for r in rows
        ]

    def get_share_token(self, collection) -> str | None:
        return collection.share_token if self.get_can_manage(collection) else None

    def get_share_url(self, collection) -> str | None:
        if not self.get_can_manage(collection):
            return None
        return self.context["request"].build_absolute_uri(collection_share_path(collection=collection))


class CollectionDetailSerializer(CollectionSerializer):
    release = serializers.SerializerMethodField(
        help_text="Managers only (null for others, and when none): the release a re-index or a model "
        "change is building, the gate is measuring or holds for you; its `gate` once measured."
    )

    class Meta(CollectionSerializer.Meta):
        fields = [*CollectionSerializer.Meta.fields, "release"]
        read_only_fields = fields

    @extend_schema_field(ReleaseSerializer(allow_null=True))
    def get_release(self, collection) -> dict | None:
        return undecided_release_row(user=self.context["request"].user, collection=collection)


def _embedding_model_field() -> serializers.CharField:
    # Checked against the registry by the service (one message for the API, the admin and commands).
    known = ", ".join(EMBEDDING_MODELS)
    return serializers.CharField(
        max_length=200,
        required=False,
        help_text=f"The model that embeds the collection's chunks: one of {known}, or an embedding "
        "endpoint the operator registered (GET /api/v1/embedding-models/). A change re-embeds "
        "every document; the current vectors serve until all are done (pending_embedding_model).",
    )


class CollectionCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=20000, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(max_length=50), max_length=50, default=list)
    visibility = serializers.ChoiceField(choices=VISIBILITY.choices, default=VISIBILITY.PRIVATE)
    admin_owned = serializers.BooleanField(default=False, help_text="Staff only: a collection with no owner.")
    embedding_model = _embedding_model_field()


class CollectionUpdateSerializer(StrictSerializer):
    description = serializers.CharField(max_length=20000, allow_blank=True, required=False)
    tags = serializers.ListField(child=serializers.CharField(max_length=50), max_length=50, required=False)
    visibility = serializers.ChoiceField(choices=VISIBILITY.choices, required=False)
    listed = serializers.BooleanField(required=False, help_text="Shown in the marketplace.")
    embedding_model = _embedding_model_field()


class CollectionFilterSerializer(serializers.Serializer):
    visibility = serializers.ChoiceField(choices=VISIBILITY.choices, required=False)
    search = serializers.CharField(max_length=200, required=False, allow_blank=True)
    owner = serializers.ChoiceField(choices=[("me", "Only mine")], required=False)


class CollectionListView(ApiView):
    serializer_class = CollectionSerializer

    @extend_schema(
        summary="Collections you can see in lists",
        parameters=[
            OpenApiParameter("visibility", enum=VISIBILITY.values),
            OpenApiParameter("search", description="Matches name or description."),
            OpenApiParameter("owner", enum=["me"]),
        ],
        responses={200: CollectionSerializer(many=True), **errors(400)},
    )
    def get(self, request):
        filters = CollectionFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        listed = collection_team_access(listed_collections(request.user), user=request.user)
        queryset = with_counts(listed).order_by("name", "pk")
        return self.paginated(_filtered(queryset, request.user, filters.validated_data), CollectionSerializer)

    @extend_schema(
        summary="Create a collection",
        request=CollectionCreateSerializer,
        responses={201: CollectionSerializer, **errors(400, 403, 429)},
    )
    def post(self, request):
        data = validated(CollectionCreateSerializer, request.data)
        admin_owned = data.pop("admin_owned")
        if admin_owned and not request.user.is_staff:
            raise ForbiddenError("only staff can create admin-owned collections")
        user_throttle_charge(user=request.user, scope="writes")
        collection = collection_create(owner=None if admin_owned else request.user, **data)
        fresh = collection_for_api_reader(user=request.user, collection_id=collection.pk)
        return Response(
            CollectionSerializer(fresh, context={"request": request}).data, status.HTTP_201_CREATED
        )


def _filtered(queryset, user, filters: dict):
    if filters.get("visibility"):
        queryset = queryset.filter(visibility=filters["visibility"])
    if filters.get("search"):
        term = filters["search"]
        queryset = queryset.filter(Q(name__icontains=term) | Q(description__icontains=term))
    if filters.get("owner") == "me":
        queryset = queryset.filter(owner=user)
    return queryset


class CollectionDetailView(ApiView):
    serializer_class = CollectionDetailSerializer

    @extend_schema(
        summary="A collection you can read", responses={200: CollectionDetailSerializer, **errors(404)}
    )
    def get(self, request, collection_id: int):
        collection = collection_for_api_reader(user=request.user, collection_id=collection_id)
        return Response(CollectionDetailSerializer(collection, context={"request": request}).data)

    @extend_schema(
        summary="Change a collection you own",
        request=CollectionUpdateSerializer,
        responses={200: CollectionDetailSerializer, **errors(400, 403, 404, 429)},
    )
    def patch(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        changes = validated(CollectionUpdateSerializer, request.data)
        if changes.get("embedding_model"):
            # A model change re-embeds every document, as a re-index does: it counts as a write.
            user_throttle_charge(user=request.user, scope="writes")
        collection_update(collection=collection, **changes)
        fresh = collection_for_api_reader(user=request.user, collection_id=collection.pk)
        return Response(CollectionDetailSerializer(fresh, context={"request": request}).data)

    @extend_schema(summary="Delete a collection you own", responses={204: None, **errors(403, 404)})
    def delete(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        collection_delete(collection=collection)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CollectionLinkSerializer(CollectionSerializer):
    opened = serializers.BooleanField(
        read_only=True, help_text="Whether you read the collection (by id, in searches) already."
    )

    class Meta(CollectionSerializer.Meta):
        fields = [*CollectionSerializer.Meta.fields, "opened"]
        read_only_fields = fields


class CollectionLinkView(ApiView):
    """A share link: GET shows what it opens, POST opens it.

    A GET never records anything: cookie sessions are sent when a page navigates a signed-in
    browser to the link, and only a POST is CSRF-checked for them.
    """

    serializer_class = CollectionLinkSerializer

    @extend_schema(
        summary="Preview a share link: the unlisted collection it opens, without opening it",
        responses={200: CollectionLinkSerializer, **errors(403, 404)},
    )
    def get(self, request, share_token: str):
        collection, opened = collection_link_preview(user=request.user, share_token=share_token)
        return self._collection(request, collection, opened=opened)

    @extend_schema(
        summary="Open a share link: the unlisted collection, readable by id from now on",
        request=None,
        responses={200: CollectionLinkSerializer, **errors(403, 404)},
    )
    def post(self, request, share_token: str):
        collection = collection_link_open(user=request.user, share_token=share_token)
        return self._collection(request, collection, opened=True)

    def _collection(self, request, collection: Collection, *, opened: bool) -> Response:
        counted = with_counts(Collection.objects.filter(pk=collection.pk)).get()
        counted.opened = opened
        return Response(CollectionLinkSerializer(counted, context={"request": request}).data)


class CollectionShareLinkView(ApiView):
    serializer_class = CollectionSerializer

    @extend_schema(
        summary="Replace the share link of a collection you own (everyone the old one let in is dropped)",
        request=None,
        responses={200: CollectionSerializer, **errors(403, 404)},
    )
    def post(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        collection_link_rotate(collection=collection)
        fresh = collection_for_api_reader(user=request.user, collection_id=collection.pk)
        return Response(CollectionSerializer(fresh, context={"request": request}).data)
