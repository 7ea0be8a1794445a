"""Selectors and services for rag_focused profiles."""

from __future__ import annotations

from knowledge.errors import KnowledgeError, NotFoundError
from knowledge.models import Profile


def profile_find(ref: str) -> Profile:
    """A profile by name, tag or id, for operator commands; ambiguity is an error, not a guess."""
    matches = list(Profile.objects.filter(name=ref)) or list(Profile.objects.filter(tag=ref))
    if not matches and ref.isdigit():
        matches = list(Profile.objects.filter(pk=int(ref)))
    if not matches:
        raise NotFoundError(f"no profile named {ref!r}")
    if len(matches) > 1:
        ids = ", ".join(str(p.pk) for p in matches)
        raise KnowledgeError(f"several profiles are named {ref!r} (ids {ids}); pass the id")
    return matches[0]
