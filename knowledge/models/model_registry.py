"""The models an operator brings: OpenAI-compatible embedding endpoints (docs/operator-guide/models.md).

A collection names its embedding model by ``name``: a bundled model's
(knowledge.clients.embedding_registry) or an endpoint's registered here.
An endpoint's dimension is discovered by one call when it is registered and then
fixed: the collection's vectors, and the HNSW index made for them
(knowledge.services.model_endpoints), depend on it.
"""

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

# Collections and chunks store the name; it also names the model in reports and the API.
MODEL_NAME = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$",
    "Letters, digits and . _ : / - only, starting with a letter or digit (at most 100).",
)


class EmbeddingEndpoint(models.Model):
    """An embedding model served over ``POST {base_url}/embeddings`` (OpenAI's wire format):
    Ollama, vLLM, Hugging Face TEI, Infinity, LocalAI, OpenAI or Azure OpenAI."""

    name = models.CharField(
        max_length=100,
        unique=True,
        validators=[MODEL_NAME],
        help_text="What collections choose, e.g. ollama/nomic-embed-text. Fixed once collections use it.",
    )
    base_url = models.CharField(
        max_length=500, help_text="OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1."
    )
    model = models.CharField(max_length=200, help_text="The model's name at the endpoint.")
    api_key = models.CharField(max_length=500, blank=True, help_text="Sent as a bearer token; never shown.")
    dimensions = models.PositiveIntegerField(
        null=True, blank=True, editable=False, help_text="Discovered by one call when registered, then fixed."
    )
    batch_size = models.PositiveSmallIntegerField(
        default=32,
        validators=[MinValueValidator(1), MaxValueValidator(2048)],
        help_text="Texts per request while ingesting.",
    )
    query_prefix = models.CharField(
        max_length=100, blank=True, help_text='Put before every question, e.g. "query: " for e5 models.'
    )
    passage_prefix = models.CharField(
        max_length=100, blank=True, help_text='Put before every passage, e.g. "passage: " for e5 models.'
    )
    max_input_tokens = models.PositiveIntegerField(
        default=512,
        validators=[MinValueValidator(16), MaxValueValidator(131072)],
        help_text="Longest text the model reads; longer passages are cut to it before sending.",
    )
    timeout_seconds = models.FloatField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(600)], help_text="Per request."
    )
    max_retries = models.PositiveSmallIntegerField(
        default=3,
        validators=[MaxValueValidator(10)],
        help_text="Retries of a failed request (429, 5xx, connection), with backoff, while ingesting.",
    )
    multilingual = models.BooleanField(
        default=False, help_text="The model reads other languages than English (questions are not refused)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RerankEndpoint(models.Model):
    """A reranker served over ``POST {base_url}/rerank`` in the common shape (``query`` and
    ``documents`` in, ``results`` of ``index`` and ``relevance_score`` out): Cohere, Jina, Hugging
    Face TEI, vLLM and Infinity all speak it. A profile chooses one for its reranking collections
    (knowledge.models.Profile.reranker); without one, the LLM reranks."""

    name = models.CharField(
        max_length=100, unique=True, validators=[MODEL_NAME], help_text="e.g. tei/bge-reranker-base."
    )
    base_url = models.CharField(max_length=500, help_text="Base URL, e.g. http://127.0.0.1:8081/v1.")
    model = models.CharField(
        max_length=200, blank=True, help_text="The model's name at the endpoint, if it asks."
    )
    api_key = models.CharField(max_length=500, blank=True, help_text="Sent as a bearer token; never shown.")
    timeout_seconds = models.FloatField(
        default=10,
        validators=[MinValueValidator(1), MaxValueValidator(120)],
        help_text="Per question: a user waits for it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
