"""What each MCP tool does, as plain synchronous functions of (user, arguments).

Every tool is a thin caller of what the REST API calls: the API's request
serializers validate the arguments (same rules, same messages), the
functions of knowledge.access resolve ids (unreadable is "not found"), and
the same services answer (retrieve, chat, passages, reindexing). Results are
the API's response bodies, with links made absolute so a client can open them.
"""

from __future__ import annotations

from django.db.models import Q
from rest_framework import serializers

from accounts.api.base import MAX_ID, StrictSerializer, validated
from knowledge.access import (
    collection_for_content_writer,
    collection_is_manageable,
    collection_team_access,
    listed_collections,
    profiles_for_user,
    readable_collections,
)
from knowledge.api.collections import CollectionSerializer, with_counts
from knowledge.api.query import QueryRequestSerializer, query_response
from knowledge.api.retrieve import (
    RetrieveRequestSerializer,
    ScopeSerializer,
    asked_scope,
    retrieve_response,
    scope_required,
)
from knowledge.chat import chat_stream
from knowledge.models import Release, Source, Subscription
from knowledge.retrieval.compare import MAX_QUERIES, search_compare
from knowledge.retrieval.passages import place_url
from knowledge.retrieval.service import MAX_QUESTION_CHARS
from knowledge.services.collections import chunk_profile_get, collection_reindex_asked
from knowledge.services.passages import MAX_NEIGHBOURS, passage_get
from knowledge.services.releases import release_newest
from knowledge.services.releases_report import release_row
from knowledge.services.sources import last_sync, with_last_sync
from knowledge.synthesis import events as ev

MAX_LISTED = 500
AGENTIC_ON = {"agentic.enabled": True}


def absolute(base_url: str, url: str) -> str:
    """A product link made absolute for clients outside the browser (relative when no base is known)."""
    return base_url.rstrip("/") + url if base_url and url.startswith("/") else url


class CallerRequest:
    """What the API's serializers read from their request: the user, and absolute links (share links)."""

    def __init__(self, *, user, base_url: str) -> None:
        self.user = user
        self.base_url = base_url

    def build_absolute_uri(self, location: str) -> str:
        return absolute(self.base_url, location)


def list_collections(*, user, base_url: str, search: str = "") -> dict:
    queryset = with_counts(collection_team_access(listed_collections(user), user=user)).order_by("name", "pk")
    term = search.strip()
    if term:
        queryset = queryset.filter(Q(name__icontains=term) | Q(description__icontains=term))
    collections = list(queryset[: MAX_LISTED + 1])
    subscribed = set(
        Subscription.objects.filter(user=user, is_active=True).values_list("collection_id", flat=True)
    )
    context = {"request": CallerRequest(user=user, base_url=base_url)}
    sources = _sources_by_collection(user, [c.pk for c in collections[:MAX_LISTED]])
    rows = [
        {
            **CollectionSerializer(c, context=context).data,
            "subscribed": c.pk in subscribed,
            "sources": sources.get(c.pk, []),
        }
        for c in collections[:MAX_LISTED]
    ]
    return {
        "collections": rows,
        "truncated": len(collections) > MAX_LISTED,
        "profiles": _profiles(user),
    }


def _sources_by_collection(user, collection_ids: list[int]) -> dict[int, list[dict]]:
    """The sources each collection follows, and how its last sync went (collections ``user`` reads)."""
    readable = readable_collections(user).filter(pk__in=collection_ids)
    found: dict[int, list[dict]] = {}
    for source in with_last_sync(Source.objects.filter(collection__in=readable).order_by("pk")):
        last = last_sync(source)
        found.setdefault(source.collection_id, []).append(
            {
                "id": source.pk,
                "kind": source.kind,
                "location": source.location,
                "last_sync": None
                if last is None
                else {"status": last.status, "finished_at": _iso(last.finished_at), **_sync_counts(last)},
            }
        )
    return found


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None


def _sync_counts(run) -> dict:
    return {name: getattr(run, name) for name in ("added", "updated", "unchanged", "deleted", "failed")}


def _profiles(user) -> list[dict]:
    readable = set(readable_collections(user).values_list("pk", flat=True))
    profiles = profiles_for_user(user).prefetch_related("profile_collections").order_by("name", "pk")
    return [
        {
            "id": profile.pk,
            "name": profile.name,
            "tag": profile.tag,
            "owned_by_you": profile.owner_id == user.pk,
            "collections": [
                link.collection_id
                for link in profile.profile_collections.all()
                if link.collection_id in readable
            ],
        }
        for profile in profiles
    ]


def search_knowledge(*, user, base_url: str, **arguments) -> dict:
    data = validated(RetrieveRequestSerializer, _given(arguments))
    body = retrieve_response(user=user, data=data)
    for item in body["results"] + body["references"]:
        item["url"] = absolute(base_url, _place_url(item))
    return body


def _place_url(item: dict) -> str:
    """The viewer link of a retrieved chunk's dict (the API shape has no url field)."""
    return place_url(
        document_id=item["document_id"],
        chunk_id=item["chunk_id"],
        page=item["page"],
        source_ref=item["source_ref"],
    )


def answer_research_question(*, user, base_url: str, **arguments) -> dict:
    data = validated(QueryRequestSerializer, _given(arguments))
    stream = chat_stream(user=user, question=data["question"], asked=asked_scope(user, data))
    for _event in stream:
        pass
    return _with_absolute_links(query_response(stream.turn), base_url)


def agentic_research_question(*, user, base_url: str, **arguments) -> dict:
    data = validated(QueryRequestSerializer, _given(arguments))
    stream = chat_stream(
        user=user, question=data["question"], asked=asked_scope(user, data), overrides=AGENTIC_ON
    )
    for _event in stream:
        pass
    body = _with_absolute_links(query_response(stream.turn), base_url)
    body["agentic"] = stream.agentic
    if not stream.agentic:
        body["fallback"] = "agentic retrieval is switched off by the operator; this is the standard answer"
    body["steps"] = [e["data"] for e in stream.turn.events if e["event"] == ev.AGENT_STEP]
    body["trace"] = next(
        (e["data"].get("agentic") for e in stream.turn.events if e["event"] == ev.LLM_STEP), None
    )
    return body


def _with_absolute_links(body: dict, base_url: str) -> dict:
    for item in body["citations"] + body["sources"]:
        if item.get("url"):
            item["url"] = absolute(base_url, item["url"])
    return body


class PassageRequestSerializer(StrictSerializer):
    chunk = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    document = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    source_ref = serializers.CharField(max_length=1000, required=False)
    neighbours = serializers.IntegerField(min_value=0, max_value=MAX_NEIGHBOURS, default=1)


def get_passage(*, user, base_url: str, **arguments) -> dict:
    data = validated(PassageRequestSerializer, _given(arguments))
    passage = passage_get(
        user=user,
        chunk_id=data.get("chunk"),
        document_id=data.get("document"),
        source_ref=data.get("source_ref", ""),
        neighbours=data["neighbours"],
    )
    passage["url"] = absolute(base_url, passage["url"])
    return passage


class OptimizeRequestSerializer(ScopeSerializer):
    queries = serializers.ListField(
        child=serializers.CharField(max_length=MAX_QUESTION_CHARS), min_length=1, max_length=MAX_QUERIES
    )
    k = serializers.IntegerField(min_value=1, max_value=100, required=False)

    def validate(self, attrs):
        return scope_required(super().validate(attrs))


def optimize_search(*, user, base_url: str, **arguments) -> dict:
    data = validated(OptimizeRequestSerializer, _given(arguments))
    asked = asked_scope(user, data)
    return search_compare(user=user, queries=data["queries"], asked=asked, k=data.get("k"))


class ReindexRequestSerializer(StrictSerializer):
    collection = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    chunk_profile = serializers.CharField(max_length=100, required=False)


def reindex_collection(*, user, base_url: str, **arguments) -> dict:
    data = validated(ReindexRequestSerializer, _given(arguments))
    collection = collection_for_content_writer(user=user, collection_id=data["collection"])
    target = collection.chunk_profile
    if data.get("chunk_profile"):
        target = chunk_profile_get(name=data["chunk_profile"])
    release = None
    # Charged by the service, as on the API and the page: one write, none for a refused call.
    if target.pk == collection.chunk_profile_id:
        queued = collection_reindex_asked(user=user, collection=collection)  # read again, no release
    else:
        queued = collection_reindex_asked(user=user, collection=collection, chunk_profile=target)
        if collection_is_manageable(user=user, collection=collection):
            release = release_newest(collection=collection)  # the one this re-index built
    collection.refresh_from_db()
    return {
        "collection": collection.pk,
        "chunk_profile": target.name,
        "documents_queued": queued,
        "switching_from": collection.chunk_profile.name if collection.pending_chunk_profile_id else None,
        "note": "the current chunks stay searchable until each document's new set is ready",
        **_release_report(release, queued),
    }


def _release_report(release: Release | None, queued: int) -> dict:
    """The release a re-index built (for the collection's managers): its row, gate and what happens next."""
    if release is None:
        return {"release": None, "gate": None, "release_status": None}
    row = release_row(release)
    return {"release": row, "gate": row.get("gate"), "release_status": _release_status(release, queued)}


def _release_status(release: Release, queued: int) -> str:
    if release.state == Release.State.BUILDING:
        # Asked for again while it builds, nothing is queued again: the documents keep their place.
        waiting = f"{queued} document(s) queued" if queued else "already under way, nothing queued again"
        return (
            f"building: {waiting}; once all have the new chunks the gate measures the "
            "release against the serving one on the collection's questions, then promotes or holds it"
        )
    if release.state == Release.State.CANDIDATE:
        return "candidate: built; the gate is measuring it against the serving release"
    if release.state == Release.State.HELD:
        return f"held for you to promote or discard: {release.reason}"
    return f"{release.state}: {release.reason}" if release.reason else release.state


def _given(arguments: dict) -> dict:
    """The arguments the client gave: unset optional ones are left out, as in an API request body."""
    return {name: value for name, value in arguments.items() if value is not None}
