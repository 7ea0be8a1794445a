import re
from pathlib import PurePath

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import OpClass
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.functions import Cast
from pgvector.django import HnswIndex, VectorField

from config.base.errors import KnowledgeError
from knowledge.models.collections import ChunkProfile, Collection

# The text-search configuration of the full-text column's words (inside
# knowledge_search_vector, migration 0019) and of PostgreSQL's own rankings the
# benchmarks compare with.
SEARCH_CONFIG = "english"
# The SQL function that makes a text's full-text vector, for chunks and questions alike.
SEARCH_VECTOR_FUNCTION = "knowledge_search_vector"
_STORED_SUFFIX = re.compile(r"\.[a-z0-9]{1,10}")


class ToTsVector(models.Func):
    """to_tsvector with a constant configuration, so it is immutable (the generated column before 0019)."""

    function = "to_tsvector"
    template = f"%(function)s('{SEARCH_CONFIG}'::regconfig, %(expressions)s)"
    output_field = SearchVectorField()


class SearchVectorOf(models.Func):
    """The chunk's full-text vector: 'english' lexemes plus the character bigrams of text written
    without spaces (Japanese, Chinese, Korean, Thai); the function is migration 0019's, and the
    lexical search computes a question's terms with the same one."""

    function = SEARCH_VECTOR_FUNCTION
    output_field = SearchVectorField()


def document_upload_path(document: "Document", filename: str) -> str:
    """Where an original is stored: a name of our own, never the uploader's.

    The uploader's name is kept in ``Document.filename``; on disk it could be
    longer than a file system allows (100 CJK characters are 300 bytes, over
    the 255 of ENAMETOOLONG) or hold characters the storage rewrites. Only a
    short ASCII extension is kept, for operators looking at the folder.
    """
    suffix = PurePath(filename).suffix.lower()
    suffix = suffix if _STORED_SUFFIX.fullmatch(suffix) else ""
    digest = document.content_hash
    return f"documents/{document.collection_id}/{digest[:2]}/{digest}/original{suffix}"


class Document(models.Model):
    class Status(models.TextChoices):
        UPLOADED = "uploaded", "Uploaded"
        PROCESSING = "processing", "Processing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=500, blank=True)
    filename = models.CharField(max_length=255)
    author = models.CharField(max_length=300, blank=True)
    category = models.CharField(max_length=100, blank=True)
    tags = ArrayField(models.CharField(max_length=50), default=list, blank=True)
    source_date = models.DateField(
        null=True, blank=True, help_text="The document's own date, used for freshness scoring."
    )
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the original bytes.")
    size = models.BigIntegerField(help_text="Bytes.")
    content_type = models.CharField(max_length=100, blank=True)
    # Where the document lives when a source brought it: the page's URL, or the file at its commit.
    origin_url = models.CharField(max_length=2000, blank=True)
    file = models.FileField(upload_to=document_upload_path, max_length=500)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.UPLOADED)
    error = models.TextField(blank=True)
    # Progress of the current processing run, for progress bars.
    sections_total = models.PositiveIntegerField(default=0)
    sections_done = models.PositiveIntegerField(default=0)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    stage = models.CharField(
        max_length=200, blank=True, help_text='What processing is doing now ("reading page 3 of 40 (OCR)").'
    )
    skipped = models.JSONField(
        default=list,
        blank=True,
        help_text="Parts of the document that could not be read (a page OCR failed on), with reasons.",
    )
    replaces = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replaced_by",
        help_text="An older version this document replaces once it is ready.",
    )
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="uploaded_documents",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "content_hash"], name="one_copy_of_bytes_per_collection"
            )
        ]
        indexes = [models.Index(fields=["collection", "filename"])]

    def __str__(self) -> str:
        return self.title or self.filename

    @property
    def display_title(self) -> str:
        return self.title or self.filename


# Document.filename's column; the stored original has a name of our own (document_upload_path).
MAX_FILENAME_CHARS = Document._meta.get_field("filename").max_length


# What no document name keeps: the C0 and C1 controls (an escape sequence rewrites the terminal
# that shows a log line; NUL cannot be stored), line separators, and the bidirectional controls
# that make "report\u202etxt.exe" show as "reportexe.txt" wherever the name is displayed.
_HIDDEN_IN_NAMES = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def document_filename_clean(filename: str) -> str:
    """The uploader's file name without folders nor characters that disguise it (controls,
    bidirectional overrides), cut to the column's length with its extension kept (the extension
    chooses between the text formats). Every document's name goes through here, a source's too."""
    name = PurePath(_HIDDEN_IN_NAMES.sub("", filename or "").replace("\\", "/")).name.strip()
    if not name:
        raise KnowledgeError("the upload has no file name")
    if len(name) <= MAX_FILENAME_CHARS:
        return name
    suffix = PurePath(name).suffix
    suffix = suffix if len(suffix) <= 16 else ""
    return name[: MAX_FILENAME_CHARS - len(suffix)] + suffix


# One partial HNSW index per embedding model, so a dense search over one model's chunks walks a
# graph of that model's vectors only: cosines between two models' vectors mean nothing, and a shared
# graph would make every search filter the other out. The column holds vectors of any dimension
# (models differ: 384 for the bundled ones, 768 or 1,536 for an endpoint's), so each index is on the
# column cast to its model's dimension, and a search orders by the same cast expression
# (knowledge.retrieval.dense). Endpoint models registered by the operator get theirs when their
# dimension is known (knowledge.services.model_endpoints); the bundled ones are declared here.
HNSW_INDEXED_MODELS = {
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", 384),
    "e5": ("intfloat/multilingual-e5-small", 384),
    "mpnet": ("sentence-transformers/all-mpnet-base-v2", 768),
}


# ef_construction 200, not pgvector's default 64: documentation sets hold many near-identical chunks
# (an API spec's examples, a guideline's repeated page furniture), and a graph built at 64 left
# whole regions unreachable. Over 25,500 corpus chunks some questions' 50 nearest chunks were all
# missed at ef_search 400 (recall 0.000 against an exact scan); at 200 the worst question kept 0.92
# (docs/operator-guide/evaluation.md; migration 0021). The build took 7.8 s for those chunks.
HNSW_EF_CONSTRUCTION = 200
HNSW_M = 16


def _model_hnsw_index(suffix: str, model: str, dimensions: int) -> HnswIndex:
    return HnswIndex(
        OpClass(Cast("embedding", VectorField(dimensions=dimensions)), name="vector_cosine_ops"),
        name=f"chunk_embedding_hnsw_{suffix}",
        m=HNSW_M,
        ef_construction=HNSW_EF_CONSTRUCTION,
        condition=models.Q(embedding_model=model),
    )


class Chunk(models.Model):
    """A piece of a document, embedded under one model and one chunk profile."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # Denormalised so access and profile filters run on this table alone.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="chunks")
    chunk_profile = models.ForeignKey(ChunkProfile, on_delete=models.PROTECT, related_name="chunks")
    embedding_model = models.CharField(max_length=200)
    index = models.PositiveIntegerField()
    content = models.TextField()
    token_count = models.PositiveIntegerField()
    source_ref = models.CharField(max_length=1000)
    heading_path = ArrayField(models.TextField(), default=list, blank=True)
    page = models.PositiveIntegerField(null=True, blank=True)
    slide = models.PositiveIntegerField(null=True, blank=True)
    sheet = models.CharField(max_length=300, blank=True)
    element_id = models.CharField(
        max_length=1000, blank=True, help_text="Id of linked content, e.g. api.json:components/schemas/User."
    )
    ref_ids = ArrayField(models.TextField(), default=list, blank=True)
    referenced_by = ArrayField(models.TextField(), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Any dimension: each model's vectors are indexed and searched cast to its own (see above).
    embedding = VectorField()
    # Searched through its copy in knowledge_chunk_lexical, which holds the GIN index (migration 0016).
    search_vector = models.GeneratedField(
        expression=SearchVectorOf("content"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document_id", "index"]
        constraints = [
            # A re-embed writes a second set under the same profile, so the model is part of the key.
            models.UniqueConstraint(
                fields=["document", "chunk_profile", "embedding_model", "index"],
                name="one_chunk_per_position",
            )
        ]
        indexes = [
            *(_model_hnsw_index(suffix, *model) for suffix, model in HNSW_INDEXED_MODELS.items()),
            models.Index(fields=["collection", "chunk_profile"], name="chunk_collection_profile"),
            models.Index(fields=["element_id"], name="chunk_element_id"),
        ]

    def __str__(self) -> str:
        return f"{self.document} [{self.source_ref}] #{self.index}"


class DocumentSummary(models.Model):
    """What a document is for (docs/design.md#agents): the router picks documents for a question by this.

    Made at ingestion, by the LLM when one is configured, otherwise extractively;
    made again whenever the document is processed again.
    """

    class Method(models.TextChoices):
        LLM = "llm", "Written by the LLM"
        EXTRACTIVE = "extractive", "Extracted from the document"

    document = models.OneToOneField(Document, on_delete=models.CASCADE, related_name="summary")
    document_type = models.CharField(max_length=200)
    summary = models.TextField()
    key_topics = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    use_for = models.TextField(blank=True)
    method = models.CharField(max_length=12, choices=Method.choices)
    model = models.CharField(max_length=200, blank=True, help_text="The LLM that wrote it, if any.")
    note = models.TextField(blank=True, help_text="Why the LLM's summary was not used, if it was not.")
    embedding_model = models.CharField(max_length=200)
    embedding = VectorField(dimensions=settings.KNOWLEDGE_EMBEDDING_DIMENSIONS)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "document summaries"

    def __str__(self) -> str:
        return f"summary of {self.document}"

    def as_dict(self) -> dict:
        return {
            "document_type": self.document_type,
            "summary": self.summary,
            "key_topics": list(self.key_topics),
            "use_for": self.use_for,
            "method": self.method,
            "model": self.model,
            "note": self.note,
            "updated_at": self.updated_at,
        }

    def router_text(self) -> str:
        return summary_router_text(self.document_type, self.summary, self.key_topics, self.use_for)


def summary_router_text(document_type: str, summary: str, key_topics, use_for: str) -> str:
    """The text of a summary the router embeds (at ingestion) and shows the LLM (when routing)."""
    return f"{document_type}. {summary} Key topics: {', '.join(key_topics)}. Use for: {use_for}"
