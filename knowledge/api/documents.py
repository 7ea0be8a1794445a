"""Documents: list and upload under a collection; read, delete, retry and re-index one document."""

from __future__ import annotations

from django.conf import settings
from django.db.models import OuterRef
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from accounts.api.base import ApiView, StrictSerializer, errors, validated
from accounts.throttles import user_throttle_charge
from config.base.errors import UploadTooLargeError
from knowledge.access import (
    collection_for_content_writer,
    collection_for_reader,
    document_for_content_writer,
    document_for_reader,
)
from knowledge.api.releases import ReleaseSerializer, undecided_release_row
from knowledge.models import Chunk, Document, DocumentSummary
from knowledge.services.collections import chunk_profile_get, collection_reindex_asked
from knowledge.services.documents import (
    DocumentUpload,
    document_delete,
    document_progress,
    document_reindex_asked,
    document_retry,
    document_upload,
    documents_fail_stale,
    upload_size_check,
)
from knowledge.services.queries import count_subquery

# Room for the multipart envelope and metadata fields around the file itself.
MULTIPART_OVERHEAD = 1024 * 1024
MAX_TAGS = 50


def _searchable_chunks(*, document, chunk_profile, embedding_model):
    """A document's chunks under its collection's current chunk profile and model: the ones search uses."""
    return Chunk.objects.filter(
        document=document, chunk_profile=chunk_profile, embedding_model=embedding_model
    )


def with_chunk_count(queryset):
    """Each document's searchable chunk count, as a subquery: one query for a whole page."""
    chunks = _searchable_chunks(
        document=OuterRef("pk"),
        chunk_profile=OuterRef("collection__chunk_profile"),
        embedding_model=OuterRef("collection__embedding_model"),
    )
    return queryset.annotate(chunk_count=count_subquery(chunks, group_by="document"))


class ProgressSerializer(serializers.Serializer):
    sections_done = serializers.IntegerField()
    sections_total = serializers.IntegerField()
    chunks_done = serializers.IntegerField()
    chunks_total = serializers.IntegerField()
    percent = serializers.IntegerField(min_value=0, max_value=100)
    stage = serializers.CharField(
        help_text='What processing is doing now, e.g. "reading page 3 of 40 (OCR)".'
    )


class SummarySerializer(serializers.Serializer):
    """What the router reads (docs/design.md#agents): made at ingestion, by the LLM or extracted."""

    document_type = serializers.CharField()
    summary = serializers.CharField()
    key_topics = serializers.ListField(child=serializers.CharField())
    use_for = serializers.CharField()
    method = serializers.ChoiceField(choices=["llm", "extractive"])
    model = serializers.CharField()
    note = serializers.CharField()
    updated_at = serializers.DateTimeField()


class DocumentSerializer(serializers.ModelSerializer):
    collection = serializers.IntegerField(source="collection_id", read_only=True)
    progress = serializers.SerializerMethodField()
    chunk_count = serializers.IntegerField(read_only=True)
    replaces = serializers.IntegerField(source="replaces_id", read_only=True, allow_null=True)
    summary = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = [
            "id",
            "collection",
            "filename",
            "title",
            "author",
            "category",
            "tags",
            "source_date",
            "content_type",
            "size",
            "content_hash",
            "status",
            "error",
            "skipped",
            "progress",
            "chunk_count",
            "replaces",
            "summary",
            "created_at",
            "processed_at",
        ]
        read_only_fields = fields

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, document) -> dict:
        return document_progress(document=document)

    @extend_schema_field(SummarySerializer(allow_null=True))
    def get_summary(self, document) -> dict | None:
        try:
            return document.summary.as_dict()
        except DocumentSummary.DoesNotExist:
            return None


def _fresh(document_id: int, *, user) -> Document:
    """A readable document (knowledge.access decides) with its searchable chunk count."""
    document = document_for_reader(user=user, document_id=document_id)
    if documents_fail_stale(documents=Document.objects.filter(pk=document.pk)):
        document.refresh_from_db()
    document.chunk_count = _searchable_chunks(
        document=document,
        chunk_profile=document.collection.chunk_profile_id,
        embedding_model=document.collection.embedding_model,
    ).count()
    return document


def _split_tags(values: list[str]) -> list[str]:
    """Tags as repeated fields, comma-separated, or both."""
    tags = [tag.strip() for value in values for tag in str(value).split(",")]
    return list(dict.fromkeys(tag for tag in tags if tag))


class UploadSerializer(StrictSerializer):
    file = serializers.FileField(help_text="The document; one file per request.")
    title = serializers.CharField(max_length=500, allow_blank=True, default="")
    author = serializers.CharField(max_length=300, allow_blank=True, default="")
    category = serializers.CharField(max_length=100, allow_blank=True, default="")
    tags = serializers.ListField(
        child=serializers.CharField(max_length=50),
        max_length=MAX_TAGS,
        default=list,
        help_text="Comma-separated, or the field repeated.",
    )
    date = serializers.DateField(
        input_formats=["%Y-%m-%d"], required=False, allow_null=True, help_text="YYYY-MM-DD: the source date."
    )


class DocumentListSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Document.Status.choices, required=False)


class CollectionDocumentsView(ApiView):
    serializer_class = DocumentSerializer
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Documents of a collection you can read",
        parameters=[OpenApiParameter("status", enum=Document.Status.values)],
        responses={200: DocumentSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request, collection_id: int):
        collection = collection_for_reader(user=request.user, collection_id=collection_id)
        filters = validated(DocumentListSerializer, request.query_params)
        documents_fail_stale(documents=collection.documents.all())
        documents = with_chunk_count(Document.objects.filter(collection=collection).select_related("summary"))
        if filters.get("status"):
            documents = documents.filter(status=filters["status"])
        return self.paginated(documents.order_by("-created_at", "-pk"), DocumentSerializer)

    @extend_schema(
        summary="Upload a document (201 new, 200 when these bytes are already in the collection)",
        request={"multipart/form-data": UploadSerializer},
        responses={201: DocumentSerializer, 200: DocumentSerializer, **errors(400, 403, 404, 413, 415, 429)},
    )
    def post(self, request, collection_id: int):
        collection = collection_for_content_writer(user=request.user, collection_id=collection_id)
        user_throttle_charge(user=request.user, scope="uploads")  # one file per request
        _refuse_oversized_body(request)
        data = validated(UploadSerializer, _upload_fields(request.data))
        upload = data["file"]
        upload_size_check(filename=upload.name, size=upload.size)  # before reading it into memory
        result = document_upload(
            collection=collection,
            uploaded_by=request.user,
            upload=DocumentUpload(
                filename=upload.name,
                data=upload.read(),
                title=data["title"],
                author=data["author"],
                category=data["category"],
                tags=data["tags"],
                source_date=data.get("date"),
            ),
        )
        body = DocumentSerializer(_fresh(result.document.pk, user=request.user)).data
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


def _refuse_oversized_body(request) -> None:
    """Refuse from Content-Length alone, before the body is parsed or spooled to disk."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    limit = settings.KNOWLEDGE_MAX_UPLOAD_BYTES
    if length > limit + MULTIPART_OVERHEAD:
        raise UploadTooLargeError(
            f"the upload is {length / 1048576:.1f} MB; the limit is {limit / 1048576:.0f} MB"
        )


def _upload_fields(data) -> dict:
    """The multipart form as plain values: one file, tags from every 'tags' field."""
    fields = {key: data.get(key) for key in data.keys() if key not in ("tags", "file")}
    files = data.getlist("file") if hasattr(data, "getlist") else [data.get("file")]
    if len(files) > 1:
        raise serializers.ValidationError({"file": ["send one file per request"]})
    fields["file"] = files[0] if files else None
    raw_tags = data.getlist("tags") if hasattr(data, "getlist") else data.get("tags", [])
    fields["tags"] = _split_tags(raw_tags if isinstance(raw_tags, list) else [raw_tags])
    if fields.get("date") == "":
        fields["date"] = None
    return fields


class DocumentDetailView(ApiView):
    serializer_class = DocumentSerializer

    @extend_schema(summary="A document you can read", responses={200: DocumentSerializer, **errors(404)})
    def get(self, request, document_id: int):
        return Response(DocumentSerializer(_fresh(document_id, user=request.user)).data)

    @extend_schema(
        summary="Delete a document of a collection you own", responses={204: None, **errors(403, 404)}
    )
    def delete(self, request, document_id: int):
        document_delete(document=document_for_content_writer(user=request.user, document_id=document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentRetryView(ApiView):
    serializer_class = DocumentSerializer

    @extend_schema(
        summary="Process a failed document again",
        request=None,
        responses={202: DocumentSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, document_id: int):
        document = document_for_content_writer(user=request.user, document_id=document_id)
        user_throttle_charge(user=request.user, scope="writes")
        document_retry(document=document)
        return Response(
            DocumentSerializer(_fresh(document.pk, user=request.user)).data, status.HTTP_202_ACCEPTED
        )


class ReindexSerializer(StrictSerializer):
    chunk_profile = serializers.CharField(
        max_length=100,
        required=False,
        help_text="A chunk profile name: re-index the whole collection under it. Omit: this document only.",
    )


class ReindexResultSerializer(serializers.Serializer):
    document = DocumentSerializer()
    chunk_profile = serializers.CharField(help_text="The chunk profile being built.")
    queued_documents = serializers.IntegerField()
    release = ReleaseSerializer(
        allow_null=True,
        help_text="Managers only, with a chunk_profile: the release the re-index builds (null once decided, "
        "or for others); GET the collection or its releases for the gate's verdict.",
    )


class DocumentReindexView(ApiView):
    serializer_class = ReindexResultSerializer

    @extend_schema(
        summary="Re-chunk and re-embed a document, or its whole collection under another chunk profile",
        request=ReindexSerializer,
        responses={202: ReindexResultSerializer, **errors(400, 403, 404, 429)},
    )
    def post(self, request, document_id: int):
        document = document_for_content_writer(user=request.user, document_id=document_id)
        name = validated(ReindexSerializer, request.data).get("chunk_profile")
        # One write of the rate either way, charged by the service (a refused ask costs nothing).
        if name:
            profile = chunk_profile_get(name=name)
            queued = collection_reindex_asked(
                user=request.user, collection=document.collection, chunk_profile=profile
            )
        else:
            document_reindex_asked(user=request.user, document=document)
            profile, queued = document.collection.chunk_profile, 1
        body = {
            "document": DocumentSerializer(_fresh(document.pk, user=request.user)).data,
            "chunk_profile": profile.name,
            "queued_documents": queued,
            "release": undecided_release_row(user=request.user, collection=document.collection)
            if name
            else None,
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)
