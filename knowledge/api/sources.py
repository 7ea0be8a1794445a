"""Sources a collection follows: list and add them, read one with its recent syncs, sync it now,
remove it (knowledge.services.sources)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from accounts.api.base import ApiView, StrictSerializer, errors, validated
from accounts.throttles import user_throttle_charge
from knowledge.access import (
    collection_for_content_writer,
    collection_for_reader,
    source_for_content_writer,
    source_for_reader,
)
from knowledge.models import Source, SourceSync
from knowledge.services.sources import (
    SourceSpec,
    last_sync,
    source_add,
    source_delete,
    source_sync_queue,
    with_last_sync,
)

RECENT_SYNCS = 10


class SyncSerializer(serializers.ModelSerializer):
    class Meta:
        model = SourceSync
        fields = [
            "id", "status", "trigger", "stage", "added", "updated", "unchanged", "deleted", "failed",
            "chunks_embedded", "errors", "error", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class SourceSerializer(serializers.ModelSerializer):
    collection = serializers.IntegerField(source="collection_id", read_only=True)
    last_sync = serializers.SerializerMethodField()

    class Meta:
        model = Source
        fields = ["id", "collection", "kind", "location", "options", "interval_hours", "cron", "grace_hours",
                  "cursor", "created_at", "last_sync"]  # fmt: skip
        read_only_fields = fields

    def get_last_sync(self, source) -> dict | None:
        run = last_sync(source)
        return SyncSerializer(run).data if run else None


class SourceDetailSerializer(SourceSerializer):
    syncs = serializers.SerializerMethodField()

    class Meta(SourceSerializer.Meta):
        fields = [*SourceSerializer.Meta.fields, "syncs"]
        read_only_fields = fields

    def get_syncs(self, source) -> list[dict]:
        return SyncSerializer(source.syncs.all()[:RECENT_SYNCS], many=True).data


class SourceCreateSerializer(StrictSerializer):
    location = serializers.CharField(
        max_length=2000, help_text="Start URL or sitemap, repository URL, or folder."
    )
    kind = serializers.ChoiceField(choices=Source.Kind.choices, required=False, allow_blank=True, default="")
    branch = serializers.CharField(max_length=200, required=False, default="")
    globs = serializers.ListField(child=serializers.CharField(max_length=300), required=False, max_length=50)
    path_prefix = serializers.CharField(max_length=500, required=False, default="")
    max_depth = serializers.IntegerField(min_value=0, max_value=20, required=False)
    max_pages = serializers.IntegerField(min_value=1, required=False)
    interval_hours = serializers.IntegerField(
        min_value=1, max_value=24 * 365, required=False, allow_null=True
    )
    cron = serializers.CharField(max_length=100, required=False, default="", help_text='e.g. "0 6 * * 1-5"')
    grace_hours = serializers.IntegerField(min_value=0, max_value=24 * 365, required=False, default=24)


_OPTION_FIELDS = ("branch", "globs", "path_prefix", "max_depth", "max_pages")


class CollectionSourcesView(ApiView):
    serializer_class = SourceSerializer

    @extend_schema(
        summary="Sources a collection you can read follows",
        responses={200: SourceSerializer(many=True), **errors(404)},
    )
    def get(self, request, collection_id: int):
        collection = collection_for_reader(user=request.user, collection_id=collection_id)
        return self.paginated(
            with_last_sync(Source.objects.filter(collection=collection).order_by("pk")), SourceSerializer
        )

    @extend_schema(
        summary="Follow a source: a web site, a Git repository, or (operators) a server folder",
        request=SourceCreateSerializer,
        responses={201: SourceSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, collection_id: int):
        collection = collection_for_content_writer(user=request.user, collection_id=collection_id)
        user_throttle_charge(user=request.user, scope="writes")  # a source makes the server fetch
        data = validated(SourceCreateSerializer, request.data)
        options = {name: data[name] for name in _OPTION_FIELDS if data.get(name) not in (None, "", [])}
        spec = SourceSpec(
            location=data["location"], kind=data["kind"], options=options,
            interval_hours=data.get("interval_hours"), cron=data["cron"], grace_hours=data["grace_hours"],
        )  # fmt: skip
        source = source_add(
            collection=collection, spec=spec, user=request.user, operator=request.user.is_staff,
            first_sync="api",  # over the owner's sync rate, the source is not added either
        )  # fmt: skip
        return Response(SourceSerializer(source).data, status=status.HTTP_201_CREATED)


class SourceDetailView(ApiView):
    serializer_class = SourceDetailSerializer

    @extend_schema(
        summary="A source, with its recent syncs", responses={200: SourceDetailSerializer, **errors(404)}
    )
    def get(self, request, source_id: int):
        return Response(
            SourceDetailSerializer(source_for_reader(user=request.user, source_id=source_id)).data
        )

    @extend_schema(
        summary="Stop following a source (its documents stay)", responses={204: None, **errors(403, 404)}
    )
    def delete(self, request, source_id: int):
        source_delete(source=source_for_content_writer(user=request.user, source_id=source_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SourceSyncView(ApiView):
    serializer_class = SourceSerializer

    @extend_schema(
        summary="Sync a source now (on a worker)",
        request=None,
        responses={202: SourceSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, source_id: int):
        source = source_for_content_writer(user=request.user, source_id=source_id)
        user_throttle_charge(user=request.user, scope="writes")
        source_sync_queue(source=source, trigger="api")
        return Response(SourceSerializer(source).data, status=status.HTTP_202_ACCEPTED)
