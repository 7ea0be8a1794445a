"""The one place that decides a user's quotas, counts their use, and refuses what would go over.

Limits (None: no limit), docs/design.md#quotas:

    documents             documents stored that the user uploaded (a source's: the collection owner's)
    bytes                 the bytes of those documents' originals, and of the copies on this server
                          (Git mirrors) of the sources of the collections the user owns
    chunks                the chunks stored for those documents that are searched or being written
                          for a re-index (a set a finished re-index left behind is not the user's)
    questions_per_day     questions asked today (the server's TIME_ZONE)
    llm_tokens_per_month  LLM tokens (input and output, every call of a question) this calendar month

What is stored counts as stored: documents still processing, failed ones and old versions kept
until their replacement is ready. Questions and tokens are counted in a ledger (UsageDay) that
deleting chat sessions does not touch.

Resolution, per limit: the user's own override when it sets the limit (or is "unlimited"), else the
most generous of their groups' overrides that set it ("unlimited" is the most generous), else the
default from the environment (KNOWLEDGE_QUOTA_*). Staff are not exempt unless an override says so.

Each check runs in the transaction that stores what it counts, under a per-user advisory lock held
to its commit, so two requests at the edge of a limit cannot both pass.
"""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q, Sum, Value
from django.db.models.functions import Coalesce, NullIf
from django.utils import timezone

from config.base.errors import QuotaExceededError
from knowledge.models import Chunk, Document, Quota, Source, UsageDay

LIMITS = ("documents", "bytes", "chunks", "questions_per_day", "llm_tokens_per_month")
DEFAULT_SETTINGS = {name: f"KNOWLEDGE_QUOTA_{name.upper()}" for name in LIMITS}
# The lock's first key: the advisory locks of quotas never meet another feature's.
_LOCK_CLASS = "knowledge_quota"
_NOT_SET = object()


def quota_limits_for(*, user_id: int | None) -> dict[str, int | None]:
    """Every limit of the user, resolved (one query); nobody (an operator's upload) has none."""
    if user_id is None:
        return dict.fromkeys(LIMITS)
    rows = list(Quota.objects.filter(Q(user_id=user_id) | Q(group__user__id=user_id)).distinct())
    own = next((row for row in rows if row.user_id == user_id), None)
    groups = [row for row in rows if row.group_id is not None]
    return {name: _resolved(name, own, groups) for name in LIMITS}


def _resolved(name: str, own: Quota | None, groups: list[Quota]) -> int | None:
    if own is not None and (said := _said(own, name)) is not _NOT_SET:
        return said
    said = [value for value in (_said(group, name) for group in groups) if value is not _NOT_SET]
    if said:
        return None if None in said else max(said)
    return getattr(settings, DEFAULT_SETTINGS[name])


def _said(row: Quota, name: str):
    """What an override says of one limit: its value, None for "unlimited", or nothing."""
    value = getattr(row, name)
    if value is not None:
        return value
    return None if row.unlimited else _NOT_SET


# -- use -------------------------------------------------------------------------------------------


def quota_usage_for(*, user_id: int) -> dict[str, int]:
    """What the user uses now, under the names of the limits."""
    return {**_stored(user_id), "chunks": _chunks_stored(user_id), **_ledger_used(user_id)}


def quota_usage_report(*, user) -> dict:
    """The Usage page's and GET /api/v1/usage/'s figures: each limit's use and value (None: no limit)."""
    limits, used = quota_limits_for(user_id=user.pk), quota_usage_for(user_id=user.pk)
    shown = {
        "documents": "documents",
        "bytes": "bytes",
        "chunks": "chunks",
        "questions_today": "questions_per_day",
        "llm_tokens_month": "llm_tokens_per_month",
    }
    return {key: {"used": used[name], "limit": limits[name]} for key, name in shown.items()}


def _stored(user_id: int, *, but_source: int | None = None) -> dict[str, int]:
    """The user's documents and bytes stored; ``but_source``: without that source's mirror."""
    row = Document.objects.filter(uploaded_by_id=user_id).aggregate(
        documents=Count("pk"), bytes=Coalesce(Sum("size"), 0)
    )
    mirrors = Source.objects.filter(collection__owner_id=user_id).exclude(pk=but_source)
    mirrored = mirrors.aggregate(bytes=Coalesce(Sum("disk_bytes"), 0))["bytes"]
    return {"documents": row["documents"], "bytes": row["bytes"] + mirrored}


def _chunks_stored(user_id: int) -> int:
    """The chunks of the user's documents in their collection's serving set or its re-index's target."""
    serving = Q(
        chunk_profile=F("collection__chunk_profile"), embedding_model=F("collection__embedding_model")
    )
    target = Q(
        chunk_profile=Coalesce("collection__pending_chunk_profile", "collection__chunk_profile"),
        embedding_model=Coalesce(
            NullIf("collection__pending_embedding_model", Value("")), "collection__embedding_model"
        ),
    )
    return Chunk.objects.filter(serving | target, document__uploaded_by_id=user_id).count()


def _lock(user_id: int) -> None:
    """Held until the surrounding transaction ends: one user's checks and writes go one at a time."""
    if not connection.in_atomic_block:
        raise RuntimeError("a quota check must run inside the transaction that writes what it counts")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s), mod(%s, 2147483647)::int)", [_LOCK_CLASS, user_id]
        )


# -- storage: checked in the transaction that stores ---------------------------------------------


def quota_storage_check(*, user_id: int | None, filename: str, size: int) -> None:
    """Refuse a new document over the user's documents or bytes quota (run before anything is stored)."""
    limits = quota_limits_for(user_id=user_id)
    if limits["documents"] is None and limits["bytes"] is None:
        return
    _lock(user_id)
    stored = _stored(user_id)
    limit, used = limits["documents"], stored["documents"]
    if limit is not None and used + 1 > limit:
        raise QuotaExceededError(
            f"document quota reached: {used} of {limit} documents used",
            quota="documents",
            limit=limit,
            used=used,
        )
    limit, used = limits["bytes"], stored["bytes"]
    if limit is not None and used + size > limit:
        raise QuotaExceededError(
            f"storage quota reached: {used} of {limit} bytes used; {filename} needs {size} more",
            quota="bytes",
            limit=limit,
            used=used,
        )


def quota_source_disk(*, source: Source) -> tuple[int | None, int]:
    """The bytes quota of the collection's owner and what they use besides this source's mirror:
    the mirror may take the difference (the limit None: any size)."""
    user_id = source.collection.owner_id
    limit = quota_limits_for(user_id=user_id)["bytes"]
    return limit, (_stored(user_id, but_source=source.pk)["bytes"] if limit is not None else 0)


def quota_chunks_lock(*, user_id: int | None) -> dict[str, int | None]:
    """Take the user's lock for a chunk write when a chunk quota applies; returns the limits.

    Taken before the document's row is locked: an upload holding this lock may wait for that row
    (its new version refers to it), so the other order could deadlock."""
    limits = quota_limits_for(user_id=user_id)
    if limits["chunks"] is not None:
        _lock(user_id)
    return limits


def quota_chunks_check(
    *, user_id: int | None, limits: dict, filename: str, adding: int, removing: int
) -> None:
    """Refuse a chunk set that would take the user over the chunk quota once the ``removing``
    chunks it replaces (its own old set, the user's own retired old version's, the set a re-index
    replaces at its switch) are gone. A set that adds no more than it replaces is never refused, so
    a re-index of the same size passes even over a lowered limit."""
    limit = limits["chunks"]
    if limit is None or adding <= removing:
        return
    used = _chunks_stored(user_id)
    if used - removing + adding > limit:
        raise QuotaExceededError(
            f"chunk quota reached: {used} of {limit} chunks used; {filename} needs {adding}",
            quota="chunks",
            limit=limit,
            used=used,
        )


# -- questions and LLM tokens: the ledger ---------------------------------------------------------


def quota_question_take(*, user) -> None:
    """Count one question, or refuse it (counting nothing) when today's questions or this month's
    LLM tokens are used up. The token check comes before any LLM call of the question."""
    limits = quota_limits_for(user_id=user.pk)
    questions, tokens = limits["questions_per_day"], limits["llm_tokens_per_month"]
    with transaction.atomic():
        if questions is not None or tokens is not None:
            _lock(user.pk)
            used = _ledger_used(user.pk)
            for name in _LEDGER_REFUSALS:
                _refuse_when_used_up(name, limit=limits[name], used=used[name])
        _ledger_add(user.pk, questions=1, tokens=0)


def _ledger_used(user_id: int) -> dict[str, int]:
    today = timezone.localdate()
    row = UsageDay.objects.filter(user_id=user_id, day__gte=today.replace(day=1)).aggregate(
        tokens=Coalesce(Sum("llm_tokens"), 0), questions=Coalesce(Sum("questions", filter=Q(day=today)), 0)
    )
    return {"questions_per_day": row["questions"], "llm_tokens_per_month": row["tokens"]}


# What a question over each ledger quota is told.
_LEDGER_REFUSALS = {
    "questions_per_day": "question quota reached: {used} of {limit} questions used today",
    "llm_tokens_per_month": "LLM token quota reached: {used} of {limit} tokens used this month",
}


def _refuse_when_used_up(name: str, *, limit: int | None, used: int) -> None:
    if limit is not None and used >= limit:
        message = _LEDGER_REFUSALS[name].format(used=used, limit=limit)
        raise QuotaExceededError(message, quota=name, limit=limit, used=used)


def quota_tokens_refusal(*, user_id: int | None) -> str:
    """Why an LLM call for ``user_id`` outside a question (a search's reranking) must not be made:
    the month's LLM tokens are used up; "" when it may."""
    limit = quota_limits_for(user_id=user_id)["llm_tokens_per_month"]
    if user_id is None or limit is None:
        return ""
    used = _ledger_used(user_id)["llm_tokens_per_month"]
    return _LEDGER_REFUSALS["llm_tokens_per_month"].format(used=used, limit=limit) if used >= limit else ""


def quota_tokens_record(*, user_id: int, tokens: int) -> None:
    """Add the LLM tokens a question spent to the user's ledger (after the calls reported them)."""
    if tokens > 0:
        _ledger_add(user_id, questions=0, tokens=tokens)


def _ledger_add(user_id: int, *, questions: int, tokens: int, day: datetime.date | None = None) -> None:
    """One statement, safe against a concurrent first write of the day."""
    table = UsageDay._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (user_id, day, questions, llm_tokens) VALUES (%s, %s, %s, %s) "
            f"ON CONFLICT (user_id, day) DO UPDATE SET questions = {table}.questions + EXCLUDED.questions, "
            f"llm_tokens = {table}.llm_tokens + EXCLUDED.llm_tokens",
            [user_id, day or timezone.localdate(), questions, tokens],
        )
