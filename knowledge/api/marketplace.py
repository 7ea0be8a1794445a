"""/api/v1/marketplace/ and subscriptions: browse listed collections, subscribe, unsubscribe, revoke."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from accounts.api.base import ApiView, errors
from knowledge.access import collection_for_manager, marketplace_listing_for
from knowledge.api.collections import COLLECTION_FIELDS, OwnerName
from knowledge.models import Collection, Subscription
from knowledge.services.marketplace import (
    collection_subscriptions,
    marketplace_collections,
    subscription_collection_for,
    subscription_create,
    subscription_end,
    subscription_reinstate,
    subscription_revoke,
)


class ListingSerializer(OwnerName, serializers.ModelSerializer):
    owner = serializers.SerializerMethodField()
    is_owner = serializers.SerializerMethodField()
    document_count = serializers.IntegerField(read_only=True, help_text="Ready (searchable) documents.")
    subscriber_count = serializers.IntegerField(read_only=True, help_text="Active subscriptions.")
    subscribed = serializers.BooleanField(read_only=True, help_text="You hold an active subscription.")

    class Meta:
        model = Collection
        fields = [
            *COLLECTION_FIELDS,
            "owner",
            "is_owner",
            "document_count",
            "subscriber_count",
            "subscribed",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_is_owner(self, collection) -> bool:
        return collection.owner_id is not None and collection.owner_id == self.context["request"].user.pk


class SubscriptionSerializer(serializers.ModelSerializer):
    collection = serializers.IntegerField(source="collection_id", read_only=True)
    collection_name = serializers.CharField(source="collection.name", read_only=True)
    user = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Subscription
        fields = [
            "id",
            "collection",
            "collection_name",
            "user",
            "is_active",
            "revoked_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class SearchSerializer(serializers.Serializer):
    search = serializers.CharField(max_length=200, required=False, allow_blank=True)


class MarketplaceListView(ApiView):
    serializer_class = ListingSerializer

    @extend_schema(
        summary="Listed collections (the marketplace)",
        parameters=[OpenApiParameter("search", description="Matches name, description or a tag.")],
        responses={200: ListingSerializer(many=True), **errors(400)},
    )
    def get(self, request):
        filters = SearchSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        queryset = marketplace_collections(user=request.user, search=filters.validated_data.get("search", ""))
        return self.paginated(queryset, ListingSerializer)


class SubscribeView(ApiView):
    serializer_class = SubscriptionSerializer

    @extend_schema(
        summary="Subscribe to a listed collection",
        request=None,
        responses={201: SubscriptionSerializer, 200: SubscriptionSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, collection_id: int):
        collection = marketplace_listing_for(user=request.user, collection_id=collection_id)
        subscription, changed = subscription_create(user=request.user, collection=collection)
        code = status.HTTP_201_CREATED if changed else status.HTTP_200_OK
        return Response(SubscriptionSerializer(subscription).data, code)

    @extend_schema(summary="Unsubscribe (access ends at once)", responses={204: None, **errors(404, 429)})
    def delete(self, request, collection_id: int):
        collection = subscription_collection_for(user=request.user, collection_id=collection_id)
        subscription_end(user=request.user, collection=collection)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CollectionSubscriptionsView(ApiView):
    serializer_class = SubscriptionSerializer

    @extend_schema(
        summary="Subscriptions to a collection you own",
        responses={200: SubscriptionSerializer(many=True), **errors(403, 404)},
    )
    def get(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        return self.paginated(collection_subscriptions(collection=collection), SubscriptionSerializer)


class CollectionSubscriptionDetailView(ApiView):
    serializer_class = SubscriptionSerializer

    @extend_schema(
        summary="Revoke a subscription to a collection you own", responses={204: None, **errors(403, 404)}
    )
    def delete(self, request, collection_id: int, subscription_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        subscription_revoke(owner=request.user, subscription_id=subscription_id, collection=collection)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CollectionSubscriptionReinstateView(ApiView):
    serializer_class = SubscriptionSerializer

    @extend_schema(
        summary="Let a revoked subscriber back in (active again while the collection is listed)",
        request=None,
        responses={200: SubscriptionSerializer, **errors(403, 404)},
    )
    def post(self, request, collection_id: int, subscription_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        subscription = subscription_reinstate(
            owner=request.user, subscription_id=subscription_id, collection=collection
        )
        return Response(SubscriptionSerializer(subscription).data)
