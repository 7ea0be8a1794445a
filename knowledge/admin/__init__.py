"""The Django admin, one module per area. Django's autodiscover imports this package, so importing the
modules here registers every ModelAdmin: content (settings, collections, documents,
profiles, sharing, chat sessions), llm (the LLM settings row), evaluation (sets, questions, runs) and
feedback (rated answers and their export to an evaluation set), sources (what collections follow) and
quotas (per-user and per-group limits, the usage ledger), releases (each index release with its
gate report, and the chunk profiles that say how documents are cut) and model_registry (the
operator's embedding endpoints)."""

from knowledge.admin import (
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
    "content",
    "evaluation",
    "feedback",
    "llm",
    "model_registry",
    "quotas",
    "releases",
    "sources",
]
