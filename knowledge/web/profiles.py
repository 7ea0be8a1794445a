"""Profiles page: create and edit your own rag_focused profiles, their collections and overrides."""

from __future__ import annotations

import re

from django.contrib import messages
from django.shortcuts import redirect, render

from accounts.throttles import user_throttle_charge
from config.errors import KnowledgeError
from knowledge.access import (
    listed_collections,
    profile_for_writer,
    profiles_for_user,
    readable_collection_ids_checked,
)
from knowledge.config import global_settings
from knowledge.parameters import PARAMETERS, ConfigError, validate_overrides
from knowledge.services.profiles import profile_create, profile_update
from knowledge.web.pages import form_ids, knowledge_page


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
            "parameter_groups": _parameter_groups(profile),
        },
    )


# The profile form's parameters in groups, each with a name and one sentence a user understands.
# Groups marked advanced sit behind a disclosure; a parameter missing here lands in "Other".
PARAMETER_GROUPS = [
    (
        "What an answer draws on",
        False,
        {
            "maxDocs": ("Passages per answer", "How many passages, at most, an answer is built from."),
            "maxChunksPerDocument": (
                "Passages from one document",
                "Stops one long document from crowding out the others (0: no limit).",
            ),
            "minRelevanceScore": (
                "Minimum relevance",
                "Passages less similar to the question than this (0 to 1) are left out.",
            ),
            "minAnswerability": (
                "When to say “nothing on this”",
                "Below this confidence (0 to 1) the answer says the documents do not cover the question "
                "instead of guessing (0: never).",
            ),
            "hybrid": ("Match exact words too", "Combine word matching with meaning-based search."),
        },
    ),
    (
        "Newer documents first",
        False,
        {
            "freshnessWeight": (
                "Weight of freshness",
                "0 ranks by relevance only; towards 1, newer documents rank higher.",
            ),
            "freshnessDecayRate": (
                "How fast documents age",
                "How quickly a document's freshness fades per day.",
            ),
        },
    ),
    (
        "The language model",
        True,
        {
            "maxTokens": ("Context size", "How much text (in tokens) from your documents the model reads."),
            "synthesisPromptOverride": (
                "Instructions to the model",
                "Replaces the default instructions for writing answers; leave empty for the default.",
            ),
            "agentic.enabled": (
                "Multi-step answering",
                "The model plans searches, checks passages and verifies its answer (slower, needs a model).",
            ),
        },
    ),
    (
        "Search ranking",
        True,
        {
            "semanticWeight": (
                "Weight of meaning-based search",
                "How much meaning counts against exact words.",
            ),
            "rrfK": (
                "Rank fusion smoothing",
                "Higher values flatten the difference between top and lower ranks.",
            ),
            "spreadSources": (
                "One passage per page first",
                "Show the best passage of each page or section before a second passage of any.",
            ),
            "queryIntent": (
                "Guess API questions' target",
                "Search only an API spec's operations, or only its schemas, when the question asks for one.",
            ),
        },
    ),
]
OTHER_GROUP = "Multi-step answering in detail"


def _parameter_groups(profile) -> list[dict]:
    """The parameters in groups, each with its global value, lock and this profile's override."""
    overrides = profile.knowledge_overrides if profile else {}
    values = global_settings()
    described = {
        key: (group, label, text)
        for group, _, keys in PARAMETER_GROUPS
        for key, (label, text) in keys.items()
    }
    groups = {
        name: {"name": name, "advanced": advanced, "rows": []} for name, advanced, _ in PARAMETER_GROUPS
    }
    groups[OTHER_GROUP] = {"name": OTHER_GROUP, "advanced": True, "rows": []}
    for key, (value, locked) in values.items():
        group, label, text = described.get(key, (OTHER_GROUP, _humanised(key), PARAMETERS[key].help_text))
        override = overrides.get(key)
        groups[group]["rows"].append(
            {
                "key": key,
                "label": label,
                "text": text,
                "global": value,
                "locked": locked,
                "override": "" if override is None else override,
            }
        )
    return [g for g in groups.values() if g["rows"]]


def _humanised(key: str) -> str:
    """'agentic.timeBudgetSeconds' -> 'Time budget seconds'."""
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key.rpartition(".")[2]).lower()
    return words[:1].upper() + words[1:]


def _save(request, profile):
    name, tag = request.POST.get("name", "").strip(), request.POST.get("tag", "").strip()
    if not name or not tag:
        raise KnowledgeError("a profile needs a name and a tag")
    collections = _collections(request)
    overrides = _overrides(request)
    if profile is None:
        user_throttle_charge(user=request.user, scope="writes")
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
