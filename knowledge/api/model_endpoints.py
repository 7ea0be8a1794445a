"""/api/v1/embedding-models/ and /api/v1/rerankers/: the models collections and profiles may
choose, and the operator's endpoints (docs/operator-guide/models.md).

Anyone signed in lists the models (an embedding model's name, dimension and whether it reads
other languages than English; a reranker's name); only staff register, change or remove an
endpoint. An endpoint's key is write-only: no answer ever holds it, only whether one is stored.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from accounts.api.base import ApiView, StrictSerializer, errors, validated
from config.base.errors import ForbiddenError, KnowledgeError, NotFoundError
from knowledge.clients.embedding_registry import EMBEDDING_MODELS
from knowledge.models import Collection, EmbeddingEndpoint, RerankEndpoint
from knowledge.models.model_registry import MODEL_NAME
from knowledge.services.model_endpoints import (
    embedding_endpoint_delete,
    embedding_endpoint_save,
    rerank_endpoint_save,
)


class EmbeddingModelSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="What a collection's `embedding_model` names.")
    kind = serializers.ChoiceField(choices=["bundled", "endpoint"])
    dimensions = serializers.IntegerField()
    multilingual = serializers.BooleanField()
    label = serializers.CharField()


class EndpointSerializer(serializers.ModelSerializer):
    api_key_stored = serializers.SerializerMethodField(help_text="Whether a key is stored (never the key).")
    collections = serializers.SerializerMethodField(help_text="Collections embedded by it.")

    class Meta:
        model = EmbeddingEndpoint
        fields = [
            "id",
            "name",
            "base_url",
            "model",
            "api_key_stored",
            "dimensions",
            "batch_size",
            "query_prefix",
            "passage_prefix",
            "max_input_tokens",
            "timeout_seconds",
            "max_retries",
            "multilingual",
            "collections",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_api_key_stored(self, endpoint) -> bool:
        return bool(endpoint.api_key)

    def get_collections(self, endpoint) -> int:
        return Collection.objects.filter(embedding_model=endpoint.name).count()


class EndpointWriteSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100, validators=[MODEL_NAME])
    base_url = serializers.CharField(max_length=500)
    model = serializers.CharField(max_length=200)
    api_key = serializers.CharField(max_length=500, required=False, allow_blank=True, write_only=True)
    batch_size = serializers.IntegerField(min_value=1, max_value=2048, default=32)
    query_prefix = serializers.CharField(max_length=100, allow_blank=True, default="", trim_whitespace=False)
    passage_prefix = serializers.CharField(
        max_length=100, allow_blank=True, default="", trim_whitespace=False
    )
    max_input_tokens = serializers.IntegerField(min_value=16, max_value=131072, default=512)
    timeout_seconds = serializers.FloatField(min_value=1, max_value=600, default=30)
    max_retries = serializers.IntegerField(min_value=0, max_value=10, default=3)
    multilingual = serializers.BooleanField(default=False)


def _staff(request) -> None:
    if not request.user.is_staff:
        raise ForbiddenError("only staff register or change model endpoints")


def _staff_row(request, model, pk: int, what: str):
    """The registered endpoint ``pk`` of ``model``, for staff only (403 for others, 404 if none)."""
    _staff(request)
    row = model.objects.filter(pk=pk).first()
    if row is None:
        raise NotFoundError(f"no such {what}")
    return row


class EmbeddingModelListView(ApiView):
    serializer_class = EmbeddingModelSerializer
    throttle_scope = "writes"

    @extend_schema(
        summary="The embedding models a collection may choose",
        responses={200: EmbeddingModelSerializer(many=True), **errors()},
    )
    def get(self, request):
        rows = [
            {
                "name": m.name,
                "kind": "bundled",
                "dimensions": m.dimensions,
                "multilingual": m.multilingual,
                "label": m.label,
            }
            for m in EMBEDDING_MODELS.values()
        ] + [
            {
                "name": e.name,
                "kind": "endpoint",
                "dimensions": e.dimensions,
                "multilingual": e.multilingual,
                "label": f"{e.model} at an endpoint",
            }
            for e in EmbeddingEndpoint.objects.filter(dimensions__isnull=False)
        ]
        return Response(EmbeddingModelSerializer(rows, many=True).data)


class EndpointListView(ApiView):
    serializer_class = EndpointSerializer
    throttle_scope = "writes"

    @extend_schema(
        summary="Registered embedding endpoints (staff)", responses={200: EndpointSerializer(many=True)}
    )
    def get(self, request):
        _staff(request)
        return self.paginated(EmbeddingEndpoint.objects.order_by("name"), EndpointSerializer)

    @extend_schema(
        summary="Register an embedding endpoint (staff)",
        description="One call to the endpoint learns its dimension; an endpoint that cannot answer is "
        "refused with the reason and nothing is stored.",
        request=EndpointWriteSerializer,
        responses={201: EndpointSerializer, **errors(400, 403, 429)},
    )
    def post(self, request):
        _staff(request)
        data = validated(EndpointWriteSerializer, request.data)
        endpoint = embedding_endpoint_save(EmbeddingEndpoint(**data))
        return Response(EndpointSerializer(endpoint).data, status.HTTP_201_CREATED)


class EndpointDetailView(ApiView):
    serializer_class = EndpointSerializer
    throttle_scope = "writes"
    throttle_methods = frozenset({"PATCH", "DELETE"})

    def _endpoint(self, request, endpoint_id: int) -> EmbeddingEndpoint:
        return _staff_row(request, EmbeddingEndpoint, endpoint_id, "embedding endpoint")

    @extend_schema(
        summary="An embedding endpoint (staff)", responses={200: EndpointSerializer, **errors(403, 404)}
    )
    def get(self, request, endpoint_id: int):
        return Response(EndpointSerializer(self._endpoint(request, endpoint_id)).data)

    @extend_schema(
        summary="Change an embedding endpoint (staff)",
        description="Checked again with one call; its dimension cannot change. An omitted `api_key` keeps "
        "the stored one; an empty one forgets it.",
        request=EndpointWriteSerializer(partial=True),
        responses={200: EndpointSerializer, **errors(400, 403, 404, 429)},
    )
    def patch(self, request, endpoint_id: int):
        endpoint = self._endpoint(request, endpoint_id)
        data = validated(EndpointWriteSerializer, request.data, partial=True)
        for field, value in data.items():
            setattr(endpoint, field, value)
        return Response(EndpointSerializer(embedding_endpoint_save(endpoint)).data)

    @extend_schema(
        summary="Remove an embedding endpoint no collection uses (staff)",
        responses={204: None, **errors(400, 403, 404)},
    )
    def delete(self, request, endpoint_id: int):
        embedding_endpoint_delete(self._endpoint(request, endpoint_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RerankerSerializer(serializers.ModelSerializer):
    api_key_stored = serializers.SerializerMethodField(help_text="Whether a key is stored (never the key).")

    class Meta:
        model = RerankEndpoint
        fields = [
            "id",
            "name",
            "base_url",
            "model",
            "api_key_stored",
            "timeout_seconds",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_api_key_stored(self, endpoint) -> bool:
        return bool(endpoint.api_key)


class RerankerWriteSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100, validators=[MODEL_NAME])
    base_url = serializers.CharField(max_length=500)
    model = serializers.CharField(max_length=200, allow_blank=True, default="")
    api_key = serializers.CharField(max_length=500, required=False, allow_blank=True, write_only=True)
    timeout_seconds = serializers.FloatField(min_value=1, max_value=120, default=10)


class RerankerListView(ApiView):
    serializer_class = RerankerSerializer
    throttle_scope = "writes"

    @extend_schema(
        summary="Rerank endpoints a profile may choose", responses={200: RerankerSerializer(many=True)}
    )
    def get(self, request):
        return self.paginated(RerankEndpoint.objects.order_by("name"), RerankerSerializer)

    @extend_schema(
        summary="Register a rerank endpoint (staff)",
        description="One rerank call checks it answers in the expected shape; one that does not is refused "
        "with the reason and nothing is stored.",
        request=RerankerWriteSerializer,
        responses={201: RerankerSerializer, **errors(400, 403, 429)},
    )
    def post(self, request):
        _staff(request)
        endpoint = rerank_endpoint_save(RerankEndpoint(**validated(RerankerWriteSerializer, request.data)))
        return Response(RerankerSerializer(endpoint).data, status.HTTP_201_CREATED)


class RerankerDetailView(ApiView):
    serializer_class = RerankerSerializer
    throttle_scope = "writes"
    throttle_methods = frozenset({"PATCH", "DELETE"})

    def _endpoint(self, request, reranker_id: int) -> RerankEndpoint:
        return _staff_row(request, RerankEndpoint, reranker_id, "rerank endpoint")

    @extend_schema(
        summary="Change a rerank endpoint (staff)",
        description="Checked again with one call. An omitted `api_key` keeps the stored one.",
        request=RerankerWriteSerializer(partial=True),
        responses={200: RerankerSerializer, **errors(400, 403, 404, 429)},
    )
    def patch(self, request, reranker_id: int):
        endpoint = self._endpoint(request, reranker_id)
        for field, value in validated(RerankerWriteSerializer, request.data, partial=True).items():
            setattr(endpoint, field, value)
        return Response(RerankerSerializer(rerank_endpoint_save(endpoint)).data)

    @extend_schema(
        summary="Remove a rerank endpoint no profile uses (staff)",
        responses={204: None, **errors(400, 403, 404)},
    )
    def delete(self, request, reranker_id: int):
        endpoint = self._endpoint(request, reranker_id)
        if endpoint.profiles.exists():
            raise KnowledgeError(
                f"{endpoint.name} reranks for a profile: choose another reranker there first"
            )
        endpoint.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
