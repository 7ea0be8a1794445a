"""The collection page's "Releases" card: its managers see each index release and the gate's verdict,
and promote, discard or roll back (the knowledge_release command's services)."""

from __future__ import annotations

from django.contrib import messages
from django.views.decorators.http import require_POST

from accounts.throttles import user_throttle_charge
from config.base.errors import KnowledgeError
from config.base.validation import id_parse
from knowledge.access import collection_for_manager
from knowledge.models import Collection, Release
from knowledge.services.releases import (
    release_discard,
    release_get,
    release_promote,
    release_rollback,
    releases_of,
)
from knowledge.services.releases_report import release_row, worse_questions
from knowledge.web.pages import collection_settings_redirect, knowledge_page

# The operator decides on these: the gate held them, or is still measuring them.
DECIDABLE = (Release.State.CANDIDATE, Release.State.HELD)


def releases_context(collection: Collection) -> dict:
    """What the card shows: every release, newest first, and whether a rollback has somewhere to go."""
    releases = releases_of(collection)
    rows = [_page_row(release) for release in releases]
    return {
        "releases": rows,
        "can_roll_back": any(r.state == Release.State.RETIRED for r in releases),
        # The card opens by itself only when a release waits for the operator's decision.
        "releases_to_decide": any(row["decidable"] for row in rows),
        "serving_release": next((row for row in rows if row["state"] == Release.State.SERVING), None),
    }


def releases_status(collection: Collection) -> list[dict]:
    """Each release's state and passages, for the collection page's poll to keep its card current."""
    return [
        {"id": r.pk, "state": r.state, "state_label": r.get_state_display(), "chunks": row["chunks"]}
        for r, row in ((release, release_row(release)) for release in releases_of(collection))
    ]


def _page_row(release: Release) -> dict:
    row = release_row(release)
    return {
        **row,
        "created": release.created_at,
        "state_label": release.get_state_display(),
        "decidable": release.state in DECIDABLE,
        "gate": _gate_figures(row.get("gate")),
        "worse_questions": worse_questions(release.gate),
    }


def _gate_figures(gate: dict | None) -> dict | None:
    """The gate's metrics with names a template can read ("recall@5" is not one)."""
    if gate is None:
        return None
    serving = gate.get("serving") or {}
    return {
        "decision": gate.get("decision") or "measured",
        "questions": gate["questions"],
        "compared_with": gate.get("compared_with"),
        "recall5": gate.get("recall@5"),
        "serving_recall5": serving.get("recall@5"),
        "mrr": gate.get("mrr"),
        "serving_mrr": serving.get("mrr"),
        "better": gate.get("better"),
        "worse": gate.get("worse"),
        "notes": gate.get("notes", []),
    }


@require_POST
@knowledge_page
def collection_releases_view(request, collection_id: int):
    """``action=promote`` or ``action=discard`` (with a release id), or ``action=rollback``."""
    collection = collection_for_manager(user=request.user, collection_id=collection_id)
    action = request.POST.get("action")
    if action not in ("promote", "discard", "rollback"):
        raise KnowledgeError("unknown action")
    user_throttle_charge(user=request.user, scope="writes")
    if action == "rollback":
        done = release_rollback(collection=collection, actor=request.user)
        queued = f"; {done.documents_queued} document(s) changed since are read into it again"
        messages.success(
            request,
            f"Release {done.serving.pk} serves again (release {done.retired.pk} retired)"
            + (queued if done.documents_queued else "."),
        )
        return _back(collection)
    release_id = id_parse(request.POST.get("release", ""), field="the release")
    release = release_get(collection=collection, release_id=release_id)
    who = request.user.get_username()
    if action == "promote":
        release_promote(release=release, actor=request.user, reason=f"promoted by {who}")
        messages.success(request, f"Release {release.pk} serves now; the one before is kept for a rollback.")
    else:
        deleted = release_discard(release=release, actor=request.user, reason=f"discarded by {who}")
        messages.success(request, f"Discarded release {release.pk} ({deleted} passages deleted).")
    return _back(collection)


def _back(collection: Collection):
    return collection_settings_redirect(collection.pk, section="releases")
