"""Collection and document pages. Thin: access comes from knowledge.access, writes from services."""

from __future__ import annotations

from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.throttles import user_throttle_charge
from config.base.errors import KnowledgeError
from config.base.validation import id_parse
from knowledge.access import (
    collection_for_content_writer,
    collection_for_manager,
    collection_for_reader,
    collection_is_content_writable,
    collection_is_manageable,
    collection_team_access,
    document_for_content_writer,
    listed_collections,
    question_scope_checked,
)
from knowledge.models import ChunkProfile, Collection, Document
from knowledge.retrieval.passages import source_place, source_url
from knowledge.retrieval.service import RetrievalRequest, retrieve
from knowledge.services.collections import (
    collection_create,
    collection_delete,
    collection_reindex_asked,
    collection_update,
)
from knowledge.services.documents import (
    PROGRESS_FIELDS,
    DocumentUpload,
    document_delete,
    document_progress,
    document_retry,
    document_upload,
    documents_fail_stale,
    upload_size_check,
)
from knowledge.services.marketplace import collection_subscriptions
from knowledge.services.sharing import (
    collection_link_open,
    collection_link_preview,
    collection_link_rotate,
    collection_share_path,
)
from knowledge.services.teams import collection_shares, shareable_groups
from knowledge.web.pages import collection_settings_redirect, knowledge_page, wants_json
from knowledge.web.releases import releases_context, releases_status
from knowledge.web.snippets import snippet
from knowledge.web.sources import source_rows


def home(request):
    return redirect("knowledge:collections")


@knowledge_page
def collection_list(request):
    if request.method == "POST":
        user_throttle_charge(user=request.user, scope="writes")
        collection = collection_create(
            name=request.POST.get("name", ""),
            owner=request.user,
            description=request.POST.get("description", ""),
            visibility=request.POST.get("visibility", Collection.Visibility.PRIVATE),
        )
        messages.success(request, f"Created {collection.name}.")
        return redirect("knowledge:collection", collection_id=collection.pk)
    listed = collection_team_access(listed_collections(request.user), user=request.user)
    collections = listed.select_related("owner", "chunk_profile")
    return render(
        request,
        "knowledge/collections.html",
        {"collections": collections, "visibilities": Collection.Visibility.choices},
    )


@knowledge_page
def collection_detail(request, collection_id: int):
    collection = collection_for_reader(user=request.user, collection_id=collection_id)
    documents_fail_stale(documents=collection.documents.all())
    documents = collection.documents.order_by("-created_at")
    can_manage = collection_is_manageable(user=request.user, collection=collection)
    owner_only = {}
    if can_manage:
        owner_only = {
            "share_url": request.build_absolute_uri(collection_share_path(collection=collection)),
            "subscriptions": collection_subscriptions(collection=collection),
            "team_shares": collection_shares(collection=collection),
            "shareable_groups": shareable_groups(user=request.user),
            **releases_context(collection),
        }
    search = request.GET.get("q", "").strip()[:500]
    return render(
        request,
        "knowledge/collection.html",
        {
            "collection": collection,
            "search": search,
            "results": _search_results(request.user, collection, search) if search else [],
            "documents": documents,
            "has_ready": documents.filter(status=Document.Status.READY).exists(),
            "can_write": collection_is_content_writable(user=request.user, collection=collection),
            "can_manage": can_manage,
            "your_teams": collection_team_access(
                Collection.objects.filter(pk=collection.pk), user=request.user
            ).values_list("team_access", flat=True)[0],
            "visibilities": Collection.Visibility.choices,
            "chunk_profiles": ChunkProfile.objects.order_by("name"),
            "sources": source_rows(collection),
            **owner_only,
        },
    )


@require_http_methods(["GET", "POST"])
@knowledge_page
def collection_link_view(request, share_token: str):
    """A share link: GET shows what it opens, the page's POST opens it (this reader opens it by id too).

    A reader who already has the collection goes straight to it.
    """
    if request.method == "POST":
        collection = collection_link_open(user=request.user, share_token=share_token)
        messages.success(request, f"{collection.name} is in your collections now.")
        return redirect("knowledge:collection", collection_id=collection.pk)
    collection, readable = collection_link_preview(user=request.user, share_token=share_token)
    if readable:
        return redirect("knowledge:collection", collection_id=collection.pk)
    ready = collection.documents.filter(status=Document.Status.READY).count()
    return render(request, "knowledge/collection_link.html", {"collection": collection, "ready": ready})


@require_POST
@knowledge_page
def collection_settings(request, collection_id: int):
    """Actions from the collection page: re-index (content writers); name, description and tags,
    visibility, a new share link, delete (managers)."""
    action = request.POST.get("action")
    if action == "reindex":
        collection = collection_for_content_writer(user=request.user, collection_id=collection_id)
        _reindex(request, collection)
        return collection_settings_redirect(collection.pk)
    collection = collection_for_manager(user=request.user, collection_id=collection_id)
    if action == "details":
        collection_update(
            collection=collection,
            name=request.POST.get("name", ""),
            description=request.POST.get("description", ""),
            tags=_tags_from_text(request.POST.get("tags", "")),
        )
        messages.success(request, f"Saved the name, description and tags of {collection.name}.")
        return redirect("knowledge:collection", collection_id=collection.pk)
    if action == "visibility":
        token = collection.share_token
        collection_update(collection=collection, visibility=request.POST.get("visibility", ""))
        readers = collection.get_visibility_display().lower()
        message = f"Who can read {collection.name}: {readers}."
        if token != collection.share_token:  # made private: the link ended with it (collection_update)
            message += " Its share link was replaced: whoever opened the old one is out."
        messages.success(request, message)
    elif action == "rotate_link":
        collection_link_rotate(collection=collection)
        messages.success(request, "A new share link is in place; the old one and everyone it let in are out.")
    elif action == "delete":
        name = collection.name
        collection_delete(collection=collection)
        messages.success(request, f"Deleted {name}.")
        return redirect("knowledge:collections")
    else:
        raise KnowledgeError("unknown action")
    return collection_settings_redirect(collection.pk)


def _reindex(request, collection) -> None:
    if not request.POST.get("chunk_profile"):
        raise KnowledgeError("choose a chunk profile")
    profile_id = id_parse(request.POST["chunk_profile"], field="the chunk profile")
    profile = ChunkProfile.objects.filter(pk=profile_id).first()
    if profile is None:
        raise KnowledgeError("choose a chunk profile")
    queued = collection_reindex_asked(user=request.user, collection=collection, chunk_profile=profile)
    messages.success(
        request,
        f"Building a new release: {queued} document(s) under {profile.name}. The current release keeps "
        "answering; when the new one is built, the gate measures it and promotes or holds it (see Releases).",
    )


# Passages a search within a collection shows, best first.
SEARCH_RESULTS = 10


def _search_results(user, collection, search: str) -> list[dict]:
    """The collection's passages for ``search`` (the answers' own hybrid retrieval), each with how it
    matched and a snippet around the searched words."""
    user_throttle_charge(user=user, scope="retrieve")  # one count with the API's searches
    context = retrieve(
        user=user,
        request=RetrievalRequest(
            question=search,
            asked=question_scope_checked(user=user, collection_ids=[collection.pk]),
            k=SEARCH_RESULTS,
            rerank_enabled=False,
        ),
    )
    return [
        {
            "title": r.chunk.document.display_title,
            "place": source_place(r.chunk.source_ref),
            "url": source_url(r.chunk),
            "how": _how_it_matched(r.scores),
            "snippet": snippet(r.chunk.content, search),
        }
        for r in context.primary_chunks
    ]


def _how_it_matched(scores: dict) -> str:
    words, meaning = scores.get("lexical_rank") is not None, scores.get("dense_rank") is not None
    if words and meaning:
        return "your words, and close in meaning"
    return "your words" if words else "close in meaning"


def _tags_from_text(text: str) -> list[str]:
    """Tags typed as one comma-separated line ("geology, travel")."""
    return [tag.strip() for tag in text.split(",") if tag.strip()]


@require_GET
@knowledge_page
def collection_documents_status(request, collection_id: int):
    """Polled by the collection page to move progress bars."""
    collection = collection_for_reader(user=request.user, collection_id=collection_id)
    documents_fail_stale(documents=collection.documents.all())
    rows = collection.documents.values(
        "id", "title", "filename", "status", "error", "skipped", *PROGRESS_FIELDS
    )
    documents = [
        {**row, "title": row["title"] or row["filename"], **document_progress(document=row)} for row in rows
    ]
    body = {"documents": documents, "sources": source_rows(collection)}
    if collection_is_manageable(user=request.user, collection=collection):
        body["releases"] = releases_status(collection)
    return JsonResponse(body)


@require_POST
@knowledge_page
def collection_upload(request, collection_id: int):
    """One or more files; the page's script sends one per request to show per-file progress."""
    collection = collection_for_content_writer(user=request.user, collection_id=collection_id)
    files = request.FILES.getlist("file")
    if not files:
        raise KnowledgeError("choose at least one file to upload")
    user_throttle_charge(user=request.user, scope="uploads", amount=len(files))  # per file, not per request
    results, errors = [], []
    for upload in files:
        try:
            upload_size_check(filename=upload.name, size=upload.size)
            result = document_upload(
                collection=collection,
                uploaded_by=request.user,
                upload=DocumentUpload(filename=upload.name, data=upload.read()),
            )
            document = result.document
            # The row's whole state at once, so the page shows a status from the first moment.
            results.append(
                {
                    "id": document.pk,
                    "filename": document.filename,
                    "title": document.title or document.filename,
                    "created": result.created,
                    "status": document.status,
                    "error": document.error,
                    "skipped": document.skipped,
                    **document_progress(document=document),
                }
            )
        except KnowledgeError as exc:
            if len(files) == 1:
                raise
            errors.append(str(exc))
    if wants_json(request):
        return JsonResponse({"documents": results, "errors": errors})
    for error in errors:
        messages.error(request, error)
    if results:
        messages.success(request, f"Uploaded {len(results)} file(s); processing has started.")
    return redirect("knowledge:collection", collection_id=collection.pk)


@require_POST
@knowledge_page
def document_retry_view(request, document_id: int):
    document = document_for_content_writer(user=request.user, document_id=document_id)
    user_throttle_charge(user=request.user, scope="writes")
    document_retry(document=document)
    messages.success(request, f"Processing {document.filename} again.")
    return redirect("knowledge:collection", collection_id=document.collection_id)


@require_POST
@knowledge_page
def document_delete_view(request, document_id: int):
    document = document_for_content_writer(user=request.user, document_id=document_id)
    collection_id = document.collection_id
    document_delete(document=document)
    messages.success(request, f"Deleted {document.filename}.")
    return redirect(reverse("knowledge:collection", kwargs={"collection_id": collection_id}))
