"""Chat pages: ask with a live event stream, resume sessions, open cited sources at their location."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q
from django.http import FileResponse, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.throttles import user_throttle_charge
from config.base.errors import NotFoundError
from config.base.validation import id_or_none, id_parse
from knowledge.access import (
    chat_session_for_owner,
    document_for_reader,
    listed_collections,
    profiles_for_user,
    question_scope_checked,
    readable_collection_ids_checked,
    session_scope_readable,
)
from knowledge.chat import chat_stream, event_stream_response, sse_stream
from knowledge.clients.llm import llm_config
from knowledge.models import ChatSession, ChatTurn, Chunk, DocumentSummary
from knowledge.retrieval.passages import match_words, source_place
from knowledge.services.documents import SERVED_CONTENT_TYPES
from knowledge.synthesis.citations import saved_answer_html
from knowledge.synthesis.quotes import quote_range_parse
from knowledge.web.pages import CHAT_PRESELECT_KEY, form_ids, knowledge_page
from knowledge.web.passages import section_parts
from knowledge.web.reader import document_reader

# Sessions listed beside the chat (the newest first); a search looks through all of them.
SESSIONS_SHOWN = 50


@require_GET
@knowledge_page
def chat_page(request):
    session = None
    if request.GET.get("session"):
        session = chat_session_for_owner(user=request.user, session_id=request.GET["session"])
    search = request.GET.get("q", "").strip()[:200]
    sessions = list(_sessions(request.user, search)[:SESSIONS_SHOWN])
    collections = listed_collections(request.user).order_by("name")
    profile_id, collection_ids = _preselected(request, sessions, collections)
    still_readable = session_scope_readable(user=request.user, session=session) if session else []
    turns = list(session.turns.all()) if session else []
    return render(
        request,
        "knowledge/chat.html",
        {
            "profiles": profiles_for_user(request.user).order_by("name"),
            "collections": collections,
            "chosen_profile": profile_id,
            "chosen_collections": collection_ids,
            "sessions": sessions,
            "search": search,
            "session": session,
            # Every collection the session searched is gone from the user's library: say so, offer others.
            "scope_lost": bool(session and not session.profile_id and not still_readable),
            "scope": _session_scope(session, still_readable) if session else "",
            "turns": [_turn_row(turn) for turn in turns],
            "cited_sources": {turn.index: [_cited_preview(c) for c in turn.cited_sources] for turn in turns},
            "mode_words": dict(ChatTurn.Mode.choices),
            "llm": llm_config(),
        },
    )


def _cited_preview(cited: dict) -> dict:
    """What a citation chip previews (static/js/chat.js): the source, its place and its passage."""
    return {
        "n": cited.get("n"),
        "title": cited.get("title") or cited.get("document") or "",
        "place": source_place(cited.get("source_ref")),
        "text": cited.get("text") or "",
    }


def _sessions(user, search: str):
    """The user's sessions, newest first; with ``search``, those whose title, questions or answers hold it."""
    sessions = ChatSession.objects.filter(user=user)
    if not search:
        return sessions
    matching_turns = ChatTurn.objects.filter(session=OuterRef("pk")).filter(
        Q(question__icontains=search) | Q(answer__icontains=search)
    )
    return sessions.filter(Q(title__icontains=search) | Exists(matching_turns))


def _preselected(request, sessions, collections) -> tuple[int | None, set[int]]:
    """What a new question searches unless the user changes it.

    ``?collection=ID`` (the collection page's "Ask about this collection") first; then the collection
    just subscribed to; then what the last session searched, if still readable; then the user's own
    collections.
    """
    readable = {c.pk: c for c in collections}
    asked = form_ids(request.GET.getlist("collection"), field="collection")
    if asked:
        return None, set(readable_collection_ids_checked(user=request.user, collection_ids=asked))
    subscribed = request.session.pop(CHAT_PRESELECT_KEY, None)
    if subscribed in readable:
        return None, {subscribed}
    if sessions:
        last = sessions[0]
        if last.profile_id and profiles_for_user(request.user).filter(pk=last.profile_id).exists():
            return last.profile_id, set()
        still_readable = {cid for cid in last.collection_ids if cid in readable}
        if still_readable:
            return None, still_readable
    return None, {c.pk for c in collections if c.owner_id == request.user.pk}


def _session_scope(session, still_readable) -> str:
    """What a resumed session searches, in words."""
    if session.profile_id:
        return f"the profile {session.profile.name}"
    names = [c.name for c in still_readable]
    return ("the collection " if len(names) == 1 else "the collections ") + ", ".join(names)


def _turn_row(turn) -> dict:
    """A saved turn as the chat page shows it: its answer as HTML and its passages in [Source N] order
    (the N-th listed is the answer's [Source N]; the numbering is the ranking's, best first).

    The HTML is rendered again from the saved text: the copy saved in the turn's events was made by the
    rules of its day (earlier ones made document links live).
    """
    html = saved_answer_html(turn.answer, turn.cited_sources) if turn.answer else ""
    sources = [
        {**s, "match": s.get("match") or match_words(s.get("scores"), s.get("role"))} for s in turn.retrieved
    ]
    return {"turn": turn, "html": html, "sources": sources}


@require_POST
@knowledge_page
def chat_ask_stream(request):
    """Answer as Server-Sent Events: retrieval, the answer text as it is written, then the final answer."""
    raw_profile = request.POST.get("profile", "")
    profile_id = form_ids([raw_profile], field="profile")[0] if raw_profile else None
    # The scope is resolved once, with the API's checks and messages (knowledge.access).
    asked = question_scope_checked(
        user=request.user,
        profile=profile_id,
        collection_ids=form_ids(request.POST.getlist("collections"), field="collections") or None,
        session=request.POST.get("session") or None,
    )
    # One count with the API's questions and searches: the page is no way round the rate.
    user_throttle_charge(user=request.user, scope="retrieve")
    stream = chat_stream(user=request.user, question=request.POST.get("question", ""), asked=asked)
    return event_stream_response(sse_stream(stream), request=request)


@require_GET
@knowledge_page
def document_view(request, document_id: int):
    """A cited source at its location: the PDF's page with the quoted sentence and its passage
    highlighted on the page, or the cited section's text, highlighted."""
    document = document_for_reader(user=request.user, document_id=document_id)
    chunk = _cited_chunk(document, request.GET.get("chunk"))
    # A quote that is not a range of the passage is left out: the viewer then shows the passage.
    quote = quote_range_parse(request.GET.get("quote"), chunk.content) if chunk else None
    is_pdf = document.content_type == "application/pdf"
    search = request.GET.get("q", "").strip()[:200]
    reader = document_reader(
        _reader_chunks(document, chunk),
        cited=chunk,
        quote=quote,
        search=search,
        part=id_or_none(request.GET.get("part")),
    )
    return render(
        request,
        "knowledge/document_view.html",
        {
            "document": document,
            "chunk": chunk,
            "reader": reader,
            "search": search,
            "is_pdf": is_pdf,
            "pdf_viewer": _pdf_viewer_data(document, chunk, quote) if is_pdf else None,
            "summary": DocumentSummary.objects.filter(document=document).first(),
        },
    )


def _reader_chunks(document, cited: Chunk | None) -> list[Chunk]:
    """The document's passages in order: the cited passage's set, else the collection's active one."""
    if cited is not None:
        profile_id, model = cited.chunk_profile_id, cited.embedding_model
    else:
        profile_id, model = document.collection.chunk_profile_id, document.collection.embedding_model
    return list(
        Chunk.objects.filter(document=document, chunk_profile_id=profile_id, embedding_model=model)
        .only("pk", "index", "content", "source_ref", "page", "metadata")
        .order_by("index")
    )


@require_GET
@knowledge_page
def document_passage(request, document_id: int):
    """The cited passage as JSON for the chat's side panel: the section's text, each overlap once, the
    quoted sentence marked. Text only: the panel renders it as text."""
    document = document_for_reader(user=request.user, document_id=document_id)
    chunk = _cited_chunk(document, request.GET.get("chunk"))
    if chunk is None:
        raise NotFoundError("name the passage: ?chunk=ID")
    quote = quote_range_parse(request.GET.get("quote"), chunk.content)
    parts = _section_parts(document, chunk, quote)
    return JsonResponse(
        {
            "title": document.display_title,
            "filename": document.filename,
            "place": source_place(chunk.source_ref),
            "origin_url": _web_link(document.origin_url),
            "parts": [
                {"cited": p.cited, "before": p.before, "quote": p.quote, "after": p.after}
                for p in parts
                if p.before or p.quote or p.after
            ],
        }
    )


def _web_link(url: str) -> str:
    """The original of a source's document (its page, its file at the synced commit), if it is a web
    address: a local repository's "path@commit:file" is shown as text by the citation, not linked."""
    return url if url.startswith(("https://", "http://")) else ""


def _section_parts(document, chunk: Chunk | None, quote: tuple[int, int] | None) -> list:
    """The cited section's chunks, each overlap shown once (knowledge.web.passages)."""
    if chunk is None:
        return []
    section = Chunk.objects.filter(
        document=document,
        chunk_profile_id=chunk.chunk_profile_id,
        embedding_model=chunk.embedding_model,
        source_ref=chunk.source_ref,
    ).order_by("index")
    return section_parts(list(section), cited_id=chunk.pk, quote=quote)


def _pdf_viewer_data(document, chunk: Chunk | None, quote: tuple[int, int] | None) -> dict:
    """What static/js/pdf_view.mjs needs: the bytes' address, the page, and the text to find on it."""
    return {
        "file": reverse("knowledge:document_file", args=[document.pk]),
        "page": (chunk.page if chunk else None) or 1,
        "passage": chunk.content if chunk else "",
        "quote": chunk.content[quote[0] : quote[1]] if quote else "",
        "assets": static("vendor/pdfjs/"),
    }


def _cited_chunk(document, raw: str | None) -> Chunk | None:
    if not raw:
        return None
    chunk = Chunk.objects.filter(document=document, pk=id_parse(raw, field="chunk")).first()
    if chunk is None:
        raise NotFoundError("no such passage in this document")
    return chunk


# A downloaded original is never rendered as a page of ours: even if a browser
# ignored the attachment disposition, it may run no script and load nothing.
DOWNLOAD_POLICY = "default-src 'none'; sandbox"


@require_GET
@knowledge_page
def document_file(request, document_id: int):
    """The stored original, always a sandboxed download; the PDF viewer's script reads the same bytes.

    The type is the one detected in the bytes at upload, never the client's; anything else a browser
    could render (HTML, SVG, XML, script, unknown) would run on our origin, so it is an attachment.
    PDFs too: the viewer draws them with pdf.js from these bytes, so no PDF is ever opened as a page
    of ours (a browser's own PDF viewer would run the file's scripts and links).
    """
    document = document_for_reader(user=request.user, document_id=document_id)
    handle = document.file.open("rb")
    response = FileResponse(
        handle,
        as_attachment=True,
        filename=document.filename,
        content_type="application/pdf" if _starts_as_pdf(handle) else _served_type(document),
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = DOWNLOAD_POLICY
    return response


def _starts_as_pdf(handle) -> bool:
    """The same test as upload detection (a %PDF- header in the first KiB), on the stored bytes."""
    head = handle.read(1024)
    handle.seek(0)
    return b"%PDF-" in head


def _served_type(document) -> str:
    """Originals stored before types were detected may carry a client's type: serve those as bytes."""
    if document.content_type in SERVED_CONTENT_TYPES:
        return document.content_type
    return "application/octet-stream"
