"""/api/v1/collections/{id}/releases/: a managed collection's index releases; promote, discard, roll back.

Thin callers of knowledge.services.releases (the knowledge_release command's own services): a
release id of another collection is "not found", a refused change (promoting the serving release,
rolling back with nothing kept) is a 400 with the service's message.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from accounts.api.base import ApiView, errors
from accounts.throttles import user_throttle_charge
from knowledge.access import collection_for_manager, collection_is_manageable
from knowledge.models import Collection
from knowledge.services.releases import (
    release_counted,
    release_discard,
    release_get,
    release_promote,
    release_rollback,
    release_undecided,
    releases_of,
)
from knowledge.services.releases_report import release_row


class ReleaseSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.ChoiceField(
        choices=["building", "candidate", "held", "serving", "retired", "discarded"],
        help_text="building: its chunks are being written; candidate: the gate is measuring it; held: the "
        "gate saw a regression (or had nothing to measure), you decide; serving; retired: kept for a "
        "rollback; discarded: its chunks are gone.",
    )
    chunk_profile = serializers.CharField()
    embedding_model = serializers.CharField()
    chunks = serializers.IntegerField(help_text="Chunks it stores.")
    created = serializers.DateTimeField()
    promoted = serializers.DateTimeField(allow_null=True)
    retired = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField(help_text="Why it was held, stopped, discarded or rolled back.")
    versions = serializers.DictField(help_text="The embedding backend, readers, extraction and product.")
    gate = serializers.DictField(
        required=False,
        help_text="Once the gate ran: its decision, this release's metrics (recall@5, mrr, ...) beside the "
        "serving release's (`serving`), and how many questions got better or worse.",
    )


class ReleaseDetailSerializer(ReleaseSerializer):
    report = serializers.DictField(
        required=False, help_text="The gate's full report, with the per-question diff (`per_question`)."
    )


class ReleaseListSerializer(serializers.Serializer):
    releases = ReleaseSerializer(many=True, help_text="Newest first.")


class DiscardedSerializer(serializers.Serializer):
    discarded = serializers.IntegerField(help_text="The release discarded.")
    chunks_deleted = serializers.IntegerField()


class RolledBackSerializer(serializers.Serializer):
    serving = serializers.IntegerField(help_text="The release that serves again.")
    retired = serializers.IntegerField(help_text="The release that served until now (kept for a while).")
    documents_queued = serializers.IntegerField(
        help_text="Documents changed since the release last served, read into it again."
    )


def undecided_release_row(*, user, collection: Collection) -> dict | None:
    """The release being built, measured or held, for the collection's managers (None for others)."""
    if not collection_is_manageable(user=user, collection=collection):
        return None
    release = release_undecided(collection=collection)
    return release_row(release) if release is not None else None


class CollectionReleasesView(ApiView):
    serializer_class = ReleaseListSerializer

    @extend_schema(
        summary="The index releases of a collection you manage, newest first",
        operation_id="collections_releases_list",
        responses={200: ReleaseListSerializer, **errors(403, 404)},
    )
    def get(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        return Response({"releases": [release_row(r) for r in releases_of(collection)]})


class ReleaseDetailView(ApiView):
    serializer_class = ReleaseDetailSerializer

    @extend_schema(
        summary="One release of a collection you manage, with its gate's full report",
        responses={200: ReleaseDetailSerializer, **errors(403, 404)},
    )
    def get(self, request, collection_id: int, release_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        release = release_get(collection=collection, release_id=release_id)
        return Response(release_row(release_counted(release), with_report=True))


class ReleasePromoteView(ApiView):
    serializer_class = ReleaseSerializer

    @extend_schema(
        summary="Make a candidate or held release serve (the serving one retires, kept for a rollback)",
        request=None,
        responses={200: ReleaseSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, collection_id: int, release_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        release = release_get(collection=collection, release_id=release_id)
        user_throttle_charge(user=request.user, scope="writes")
        promoted = release_promote(
            release=release, actor=request.user, reason=f"promoted by {request.user.get_username()}"
        )
        return Response(release_row(release_counted(promoted)))


class ReleaseDiscardView(ApiView):
    serializer_class = DiscardedSerializer

    @extend_schema(
        summary="Discard a candidate, held or retired release and its chunks",
        request=None,
        responses={200: DiscardedSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, collection_id: int, release_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        release = release_get(collection=collection, release_id=release_id)
        user_throttle_charge(user=request.user, scope="writes")
        deleted = release_discard(
            release=release, actor=request.user, reason=f"discarded by {request.user.get_username()}"
        )
        return Response({"discarded": release.pk, "chunks_deleted": deleted})


class ReleaseRollbackView(ApiView):
    serializer_class = RolledBackSerializer

    @extend_schema(
        summary="Serve the release that served before the current one again, from its kept chunks",
        request=None,
        responses={200: RolledBackSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, collection_id: int):
        collection = collection_for_manager(user=request.user, collection_id=collection_id)
        user_throttle_charge(user=request.user, scope="writes")
        done = release_rollback(collection=collection, actor=request.user)
        return Response(
            {
                "serving": done.serving.pk,
                "retired": done.retired.pk,
                "documents_queued": done.documents_queued,
            }
        )
