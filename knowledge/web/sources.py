"""The collection page's sources: add one (with a preview of what it would read), sync it now, stop
following it; and their status for the page's poll (knowledge.services.sources)."""

from __future__ import annotations

from django.contrib import messages
from django.http import JsonResponse
from django.views.decorators.http import require_POST

from accounts.throttles import user_throttle_charge
from config.base.errors import KnowledgeError
from knowledge.access import collection_for_content_writer, source_for_content_writer
from knowledge.models import Source, SourceSync
from knowledge.services.sources import (
    SourceSpec,
    last_sync,
    source_add,
    source_delete,
    source_preview,
    source_sync_queue,
    with_last_sync,
)
from knowledge.services.sync_liveness import syncs_fail_stale
from knowledge.web.pages import collection_settings_redirect, knowledge_page

# Failed items shown per source on the page (the API and the admin have them all).
SHOWN_ERRORS = 20


def source_rows(collection) -> list[dict]:
    """Each source as the page shows it: its schedule, its last sync in words, the sync's stage
    while it runs and the reason of each failed item."""
    syncs_fail_stale(sources=collection.sources.all())
    return [_row(source) for source in with_last_sync(collection.sources.order_by("pk"))]


def _row(source: Source) -> dict:
    last = last_sync(source)
    return {
        "id": source.pk,
        "kind": source.get_kind_display(),
        "location": source.location,
        "schedule": _schedule_words(source),
        "syncing": bool(last and last.status == SourceSync.Status.RUNNING),
        "state": _state_words(last),
        "stage": last.stage if last and last.status == SourceSync.Status.RUNNING else "",
        "errors": [f"{e['item']}: {e['reason']}" for e in (last.errors if last else [])[:SHOWN_ERRORS]],
        "error": last.error if last else "",
    }


def _schedule_words(source: Source) -> str:
    if source.cron:
        return f"syncs on the schedule {source.cron}"
    if source.interval_hours:
        return f"syncs every {source.interval_hours} hour{'s' if source.interval_hours != 1 else ''}"
    return "syncs when asked"


def _state_words(last: SourceSync | None) -> str:
    if last is None:
        return "not synced yet"
    if last.status == SourceSync.Status.RUNNING:
        return "syncing…"
    counts = (
        f"{last.added} added, {last.updated} updated, {last.unchanged} unchanged, "
        f"{last.deleted} removed, {last.failed} failed"
    )
    when = f"{last.finished_at:%Y-%m-%d %H:%M}" if last.finished_at else ""
    if last.status == SourceSync.Status.FAILED:
        return f"sync failed {when}"
    return f"synced {when}: {counts}"


@require_POST
@knowledge_page
def source_add_view(request, collection_id: int):
    collection = collection_for_content_writer(user=request.user, collection_id=collection_id)
    user_throttle_charge(user=request.user, scope="writes")
    spec = SourceSpec(
        location=request.POST.get("location", ""),
        kind=request.POST.get("kind", ""),
        options=_options(request.POST),
        interval_hours=_hours(request.POST.get("every", "")),
    )
    source = source_add(
        collection=collection,
        spec=spec,
        user=request.user,
        operator=request.user.is_staff,
        first_sync="page",  # over the owner's sync rate, the source is not added either
    )
    messages.success(request, f"Following {source.location}: the first sync has started.")
    return collection_settings_redirect(collection.pk, section="collection-sources")


@require_POST
@knowledge_page
def source_preview_view(request, collection_id: int):
    """What the source would read, as JSON for the form; nothing is stored."""
    collection = collection_for_content_writer(user=request.user, collection_id=collection_id)
    user_throttle_charge(user=request.user, scope="writes")  # a preview fetches a page
    draft, items, note = source_preview(
        collection=collection,
        location=request.POST.get("location", ""),
        kind=request.POST.get("kind", ""),
        options=_options(request.POST),
        user=request.user,
    )  # a site that cannot be read is a KnowledgeError (SourceReadError): the form shows its reason
    return JsonResponse({"kind": draft.get_kind_display(), "items": items, "note": note})


@require_POST
@knowledge_page
def source_sync_view(request, source_id: int):
    source = source_for_content_writer(user=request.user, source_id=source_id)
    user_throttle_charge(user=request.user, scope="writes")  # a sync makes the server fetch
    source_sync_queue(source=source, trigger="page")
    messages.success(request, f"Syncing {source.location}.")
    return collection_settings_redirect(source.collection_id, section="collection-sources")


@require_POST
@knowledge_page
def source_delete_view(request, source_id: int):
    source = source_for_content_writer(user=request.user, source_id=source_id)
    collection_id = source.collection_id
    source_delete(source=source)
    messages.success(request, f"No longer following {source.location}; its documents stay.")
    return collection_settings_redirect(collection_id, section="collection-sources")


def _options(form) -> dict:
    options = {}
    if form.get("branch", "").strip():
        options["branch"] = form["branch"].strip()
    globs = [g.strip() for g in form.get("globs", "").split(",") if g.strip()]
    if globs:
        options["globs"] = globs
    if form.get("path_prefix", "").strip():
        options["path_prefix"] = form["path_prefix"].strip()
    return options


def _hours(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 24 * 365:
        raise KnowledgeError("sync every: a whole number of hours, from 1")
    return int(text)
