"""What a command searches and as whom: --profile NAME or --collection NAME, and --user."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from accounts.selectors import user_find
from config.base.errors import KnowledgeError
from knowledge.parameters import validate_overrides
from knowledge.services.collections import collection_find
from knowledge.services.profiles import profile_find


def operator_user():
    operator = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    if operator is None:
        raise KnowledgeError("admin-owned collection and no operator account; pass --user")
    return operator


def resolve_target(*, profile: str | None, collection: str | None, username: str | None):
    """(profile, collection_ids, user): acting as --user, else the owner, else the operator."""
    user = user_find(username) if username else None
    if profile:
        found = profile_find(profile)
        return found, None, user or found.owner or operator_user()
    found = collection_find(collection, owner=user, any_owner=True)
    return None, [found.pk], user or found.owner or operator_user()


def parse_settings(items: list[str]) -> dict:
    """``--set KEY=VALUE`` options as validated parameter overrides (ConfigError or KnowledgeError)."""
    raw = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise KnowledgeError(f"--set expects KEY=VALUE, got {item!r}")
        raw[key.strip()] = value
    return validate_overrides(raw)
