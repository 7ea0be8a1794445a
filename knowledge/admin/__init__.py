"""The Django admin, one module per area. Django's autodiscover imports this package, so importing the
modules here registers every ModelAdmin: content (settings, collections, documents,
profiles, sharing, chat sessions), llm (the LLM settings row), evaluation (sets, questions, runs) and
feedback (rated answers and their export to an evaluation set), sources (what collections follow) and
quotas (per-user and per-group limits, the usage ledger) and releases (each index release with its
gate report), chunk_profiles (how documents are cut), model_registry (the operator's embedding
endpoints)."""

from knowledge.admin import (
    chunk_profiles,
    content,
    evaluation,
    feedback,
    llm,
    model_registry,
    quotas,
    releases,
    sources,
)

__all__ = [
    "chunk_profiles",
    "content",
    "evaluation",
    "feedback",
    "llm",
    "model_registry",
    "quotas",
    "releases",
    "sources",
]
