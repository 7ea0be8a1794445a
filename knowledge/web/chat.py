"""Chat pages: ask with a live event stream, resume sessions. A cited source opens in the document
reader (knowledge.web.reader)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from accounts.throttles import user_throttle_charge
from knowledge.access import (
    chat_session_for_owner,
    listed_collections,
    profiles_for_user,
    question_scope_checked,
    readable_collection_ids_checked,
    session_scope_readable,
)
from knowledge.chat import chat_stream, event_stream_response, sse_stream
from knowledge.clients.llm import llm_config
from knowledge.models import ChatSession, ChatTurn
from knowledge.retrieval.passages import match_words, source_place
from knowledge.synthesis.citations import saved_answer_html
from knowledge.web.pages import CHAT_PRESELECT_KEY, form_ids, knowledge_page

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
    html = saved_answer_html(turn.answer, turn.cited_sources, turn.closest) if turn.answer else ""
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
