"""Test helpers for code that re-indexes: the gate holds a release it has no questions for."""

from __future__ import annotations

from knowledge.models import Release
from knowledge.services.releases import release_promote


def held_promoted(collection) -> Release:
    """Promote the collection's held release as an operator would (the gate had nothing to measure)."""
    release = Release.objects.get(collection=collection, state=Release.State.HELD)
    assert release.reason.startswith("nothing to measure"), release.reason
    release_promote(release=release, reason="promoted by an operator")
    collection.refresh_from_db()
    return release
