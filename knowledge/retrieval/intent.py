"""Query intent for API questions (docs/design.md#references): search operations or schemas first.

The narrowing applies only to API chunks (those with a metadata type); chunks
of other documents stay eligible, so a mixed collection is never narrowed away
from a prose answer. The caller falls back to the unfiltered search when the
narrowed one returns fewer than three results.
"""

from __future__ import annotations

import re

_ENDPOINT = re.compile(
    r"\b(endpoint|route"
    r"|(how (do|can|to|would) (i|we|you)? ?(create|list|get|fetch|update|delete|remove|add|call))"
    r"|(GET|POST|PUT|PATCH|DELETE) /)",
    re.IGNORECASE,
)
_SCHEMA = re.compile(
    r"\b(fields?|schema|propert(y|ies)|structure|object|data model|attributes?|payload|body)\b", re.IGNORECASE
)
_ERROR = re.compile(r"\b(errors?|status codes?|[45]\d\d|fail(s|ed|ure)?|exceptions?)\b", re.IGNORECASE)

_FILTERS = {
    "endpoint": "AND (c.metadata->>'type' IS NULL OR c.metadata->>'type' = 'operation')",
    "schema": "AND (c.metadata->>'type' IS NULL OR c.metadata->>'type' = 'component')",
    "error": (
        "AND (c.metadata->>'type' IS NULL OR c.metadata->>'type' = 'operation' "
        "OR c.metadata->>'component_type' = 'responses')"
    ),
}


def query_intent(question: str) -> str | None:
    """'endpoint', 'schema', 'error' or None; errors first (they also mention endpoints)."""
    if _ERROR.search(question):
        return "error"
    if _SCHEMA.search(question):
        return "schema"
    if _ENDPOINT.search(question):
        return "endpoint"
    return None


def intent_filter_sql(intent: str | None) -> str:
    return _FILTERS.get(intent or "", "")
