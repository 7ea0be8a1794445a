"""Selectors and services for rag_focused profiles."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from config.base.errors import KnowledgeError, NotFoundError
from config.base.validation import id_or_none, text_clean
from knowledge.models import Profile, ProfileCollection, RerankEndpoint
from knowledge.parameter_values import SOURCE_LOCKED


def profile_find(ref: str) -> Profile:
    """A profile by name, tag or id, for operator commands; ambiguity is an error, not a guess."""
    matches = list(Profile.objects.filter(name=ref)) or list(Profile.objects.filter(tag=ref))
    number = id_or_none(ref)
    if not matches and number:
        matches = list(Profile.objects.filter(pk=number))
    if not matches:
        raise NotFoundError(f"no profile named {ref!r}")
    if len(matches) > 1:
        ids = ", ".join(str(p.pk) for p in matches)
        raise KnowledgeError(f"several profiles are named {ref!r} (ids {ids}); pass the id")
    return matches[0]


def profile_create(
    *,
    owner,
    name: str,
    tag: str,
    knowledge_overrides: dict,
    collections: list[dict],
    reranker: str | None = None,
) -> Profile:
    """A new profile searching ``collections`` ([{"collection": id, "reranking": bool}, ...]),
    reranked by the rerank endpoint named ``reranker`` (None: the LLM)."""
    name, tag = _name_clean(name), _tag_clean(tag)
    reranker = reranker_named(reranker)
    try:
        with transaction.atomic():
            profile = Profile.objects.create(
                owner=owner, name=name, tag=tag, knowledge_overrides=knowledge_overrides, reranker=reranker
            )
            _links_set(profile, collections)
    except IntegrityError:
        raise KnowledgeError(f"you already have a profile named {name!r}") from None
    return profile


def profile_update(*, profile: Profile, collections: list[dict] | None = None, **changes) -> Profile:
    """Set the given fields; ``collections``, when given, replaces the profile's list."""
    if "name" in changes:
        changes["name"] = _name_clean(changes["name"])
    if "tag" in changes:
        changes["tag"] = _tag_clean(changes["tag"])
    if "reranker" in changes:
        changes["reranker"] = reranker_named(changes["reranker"])
    try:
        with transaction.atomic():
            for field, value in changes.items():
                setattr(profile, field, value)
            profile.save()
            if collections is not None:
                _links_set(profile, collections)
    except IntegrityError:
        raise KnowledgeError(f"you already have a profile named {profile.name!r}") from None
    return profile


def reranker_named(name: str | None) -> RerankEndpoint | None:
    """The rerank endpoint called ``name`` (None: none, the LLM reranks); KnowledgeError naming
    the registered ones for any other name."""
    if name is None:
        return None
    found = RerankEndpoint.objects.filter(name=name).first()
    if found is None:
        known = ", ".join(RerankEndpoint.objects.values_list("name", flat=True)) or "none is registered"
        raise KnowledgeError(f"no rerank endpoint named {str(name)[:100]!r} (registered: {known})")
    return found


def _name_clean(name) -> str:
    return text_clean(name, field="a profile's name", required=True, max_length=200)


def _tag_clean(tag) -> str:
    tag = text_clean(tag, field="a profile's tag", required=True, max_length=40)
    try:
        validate_slug(tag)
    except ValidationError:
        raise KnowledgeError("a profile's tag has only letters, digits, hyphens and underscores") from None
    return tag


def profile_delete(*, profile: Profile) -> None:
    """Delete the profile (its collection links cascade; the collections stay)."""
    profile.delete()


def _links_set(profile: Profile, collections: list[dict]) -> None:
    profile.profile_collections.all().delete()
    ProfileCollection.objects.bulk_create(
        ProfileCollection(
            profile=profile, collection_id=link["collection"], reranking=link.get("reranking", False)
        )
        for link in collections
    )


def ignored_overrides(*, overrides: dict, config) -> list[str]:
    """Override keys an admin lock makes ineffective (``config`` as from effective_config)."""
    return sorted(key for key in overrides if config[key].source == SOURCE_LOCKED)
