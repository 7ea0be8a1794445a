"""Profiles page: create and edit your own rag_focused profiles, their collections and overrides."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from config.errors import KnowledgeError
from knowledge.access import (
    listed_collections,
    profile_for_writer,
    profiles_for_user,
    readable_collection_ids_checked,
)
from knowledge.config import global_settings
from knowledge.parameters import PARAMETERS, ConfigError, validate_overrides
from knowledge.profiles import profile_create, profile_update
from knowledge.views import form_ids, knowledge_page


@knowledge_page
def profiles_page(request, profile_id: int | None = None):
    profile = profile_for_writer(user=request.user, profile_id=profile_id) if profile_id else None
    if request.method == "POST":
        saved = _save(request, profile)
        messages.success(request, f"Saved profile {saved.name}.")
        return redirect("knowledge:profile", profile_id=saved.pk)
    chosen = set(profile.profile_collections.values_list("collection_id", flat=True)) if profile else set()
    return render(
        request,
        "knowledge/profiles.html",
        {
            "profiles": profiles_for_user(request.user).order_by("name"),
            "profile": profile,
            "collections": listed_collections(request.user).order_by("name"),
            "chosen": chosen,
            "parameters": _parameter_rows(profile),
        },
    )


def _parameter_rows(profile) -> list[dict]:
    """Each parameter with its global value, lock and this profile's override, for the form."""
    overrides = profile.knowledge_overrides if profile else {}
    rows = []
    for key, (value, locked) in global_settings().items():
        override = overrides.get(key)
        rows.append(
            {
                "key": key,
                "global": value,
                "locked": locked,
                "help": PARAMETERS[key].help_text,
                "override": "" if override is None else override,
            }
        )
    return rows


def _save(request, profile):
    name, tag = request.POST.get("name", "").strip(), request.POST.get("tag", "").strip()
    if not name or not tag:
        raise KnowledgeError("a profile needs a name and a tag")
    collections = _collections(request)
    overrides = _overrides(request)
    if profile is None:
        return profile_create(
            owner=request.user, name=name, tag=tag, knowledge_overrides=overrides, collections=collections
        )
    return profile_update(
        profile=profile, name=name, tag=tag, knowledge_overrides=overrides, collections=collections
    )


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
