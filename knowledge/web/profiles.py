"""Profiles page: create and edit your own rag_focused profiles, their collections and overrides."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from accounts.throttles import user_throttle_charge
from config.base.errors import KnowledgeError
from knowledge.access import (
    listed_collections,
    profile_for_writer,
    profiles_for_user,
    readable_collection_ids_checked,
)
from knowledge.models import RerankEndpoint
from knowledge.parameter_values import global_settings
from knowledge.parameters import (
    OTHER_GROUP,
    PARAMETER_GROUPS,
    PARAMETERS,
    ConfigError,
    parameter_words,
    validate_overrides,
    value_in_words,
)
from knowledge.services.profiles import profile_create, profile_update
from knowledge.web.pages import form_ids, knowledge_page


@knowledge_page
def profiles_page(request, profile_id: int | None = None):
    profile = profile_for_writer(user=request.user, profile_id=profile_id) if profile_id else None
    if request.method == "POST":
        saved = _save(request, profile)
        messages.success(request, f"Saved profile {saved.name}.")
        return redirect("knowledge:profile", profile_id=saved.pk)
    links = profile.profile_collections.values_list("collection_id", "reranking") if profile else []
    chosen, reranked = {cid for cid, _ in links}, {cid for cid, rerank in links if rerank}
    return render(
        request,
        "knowledge/profiles.html",
        {
            "profiles": profiles_for_user(request.user).order_by("name"),
            "profile": profile,
            "collections": listed_collections(request.user).order_by("name"),
            "chosen": chosen,
            "reranked": reranked,
            "rerankers": RerankEndpoint.objects.order_by("name").values_list("name", flat=True),
            "parameter_groups": _parameter_groups(profile),
        },
    )


def _parameter_groups(profile) -> list[dict]:
    """The parameters in groups, each with its global value, lock and this profile's override."""
    overrides = profile.knowledge_overrides if profile else {}
    values = global_settings()
    groups = {
        name: {"name": name, "advanced": advanced, "rows": []} for name, advanced, _ in PARAMETER_GROUPS
    }
    groups[OTHER_GROUP] = {"name": OTHER_GROUP, "advanced": True, "rows": []}
    for key, (value, locked) in values.items():
        group, label, text = parameter_words(key)
        override = overrides.get(key)
        groups[group]["rows"].append(
            {
                "key": key,
                "label": label,
                "text": text,
                "global": value_in_words(key, value),
                "locked": locked,
                "override": "" if override is None else override,
                # The user's own value, set before the operator locked the parameter: it is not used.
                "ignored_override": None if override is None or not locked else value_in_words(key, override),
            }
        )
    return [g for g in groups.values() if g["rows"]]


def _save(request, profile):
    name, tag = request.POST.get("name", "").strip(), request.POST.get("tag", "").strip()
    if not name or not tag:
        raise KnowledgeError("a profile needs a name and a tag")
    fields = {
        "name": name,
        "tag": tag,
        "knowledge_overrides": _overrides(request),
        "collections": _collections(request),
        # Empty: the language model reranks (knowledge.services.profiles.reranker_named).
        "reranker": request.POST.get("reranker", "").strip() or None,
    }
    if profile is None:
        user_throttle_charge(user=request.user, scope="writes")
        return profile_create(owner=request.user, **fields)
    return profile_update(profile=profile, **fields)


def _collections(request) -> list[dict]:
    requested = form_ids(request.POST.getlist("collections"), field="collections")
    ids = readable_collection_ids_checked(user=request.user, collection_ids=requested)
    rerank = set(request.POST.getlist("rerank"))
    return [{"collection": cid, "reranking": str(cid) in rerank} for cid in ids]


def _overrides(request) -> dict:
    """Filled-in override fields; locked parameters cannot be overridden and are ignored."""
    locked = {key for key, (_, is_locked) in global_settings().items() if is_locked}
    raw = {
        key: request.POST[f"override_{key}"]
        for key in PARAMETERS
        if request.POST.get(f"override_{key}", "") != "" and key not in locked
    }
    try:
        return validate_overrides(raw)
    except ConfigError as exc:
        raise KnowledgeError(str(exc)) from exc
