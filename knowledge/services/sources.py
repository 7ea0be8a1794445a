"""Sources: a collection follows a web site, a Git repository or a server folder and stays current.

A sync lists what the source holds now (knowledge.source_fetch.readers), uploads what is new or
changed exactly as an upload is (same limits, same type detection; a new version replaces the old
document only once it is ready), leaves the unchanged alone (nothing fetched twice, nothing embedded
again), and removes an item gone from the source once it has been gone for the source's grace
period. Every failure is kept with its item and reason; the sync goes on with the other items.
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone

from accounts.audit import audit_record
from accounts.concurrency import concurrency_slot
from accounts.throttles import throttle_charge, throttle_rate_words
from config.base.connections import release_connections
from config.base.errors import KnowledgeError, RateLimitedError
from knowledge.models import Chunk, Collection, Document, Source, SourceItem, SourceSync
from knowledge.processing_jobs import worker_name
from knowledge.services.documents import DocumentUpload, document_delete, document_upload
from knowledge.services.sync_liveness import SyncBeat, SyncLost, sync_held, syncs_fail_stale
from knowledge.source_fetch.items import Listed, SourceReadError
from knowledge.source_fetch.readers import folder_root_checked, git_url_checked, preview_items, reader_for
from knowledge.source_fetch.web_reader import web_url_checked
from knowledge.task_queues import long_work_queue, task_queue

logger = logging.getLogger(__name__)

# The django-q2 task that syncs a source (knowledge.tasks), queued and scheduled by its dotted name.
SYNC_TASK = "knowledge.tasks.sync_source"
SCHEDULE = "schedule"  # the trigger of the syncs the schedule starts
# What a sync stopped in its process says (a worker's timeout, Ctrl-C).
INTERRUPTED = "the sync was interrupted (its worker stopped); sync again"
BEING_SYNCED = "this source is being synced already; wait for that sync to end"
# A source syncs by itself at most this often: interval_hours starts at 1, and so does a cron's gap.
MIN_SCHEDULE_GAP = datetime.timedelta(hours=1)
# Firings of a cron expression compared. Its minutes and seconds are the same in every hour it fires,
# so two firings within an hour show among the first few; more make it sure across days and months.
CRON_FIRINGS_CHECKED = 24


def with_last_sync(sources):
    """``sources`` (a queryset) with each one's newest sync fetched in one query, however long their
    history: read it with ``last_sync``."""
    newest = SourceSync.objects.order_by("-started_at", "-pk")[:1]
    return sources.prefetch_related(Prefetch("syncs", queryset=newest, to_attr="newest_syncs"))


def last_sync(source: Source) -> SourceSync | None:
    newest = getattr(source, "newest_syncs", None)
    if newest is None:  # not fetched with the source
        return source.syncs.order_by("-started_at", "-pk").first()
    return newest[0] if newest else None


def source_kind_guess(location: str) -> str:
    """git for a repository URL (.git, ssh, git@), folder for a path, web for any other URL (the web
    source then refuses what is not http or https, with its reason)."""
    if location.startswith(("git@", "ssh://")) or location.rstrip("/").endswith(".git"):
        return Source.Kind.GIT
    if "://" in location and not location.startswith("file://"):
        return Source.Kind.WEB
    return Source.Kind.FOLDER


@dataclass(frozen=True)
class SourceSpec:
    """What a new source follows and when: its ``location`` (a URL, a repository, a server folder),
    its ``kind`` (guessed from the location when empty), its reader's ``options`` (a branch, globs),
    its schedule (every ``interval_hours``, or on its ``cron``; neither: on demand only) and the
    ``grace_hours`` an item stays after it is gone from the source."""

    location: str
    kind: str = ""
    options: dict | None = None
    interval_hours: int | None = None
    cron: str = ""
    grace_hours: int = 24


def source_add(
    *, collection: Collection, spec: SourceSpec, user=None, operator: bool = False, first_sync: str = ""
) -> Source:
    """A new source for ``collection``; its location is checked now, not at its first sync.

    ``first_sync``: the trigger ("page", "api") of the sync that starts with it, queued in the same
    transaction and counted against the owner's sync rate: over that rate, nothing is added. The
    location's check looks its host up outside that transaction, holding no database connection."""
    location = spec.location.strip()
    kind = spec.kind or source_kind_guess(location)
    source_location_check(kind, location, operator=operator)
    cron = source_cron_checked(spec.cron)
    if Source.objects.filter(collection=collection, kind=kind, location=location).exists():
        raise KnowledgeError(f"this collection follows {location} already")
    with transaction.atomic():
        source = Source.objects.create(
            collection=collection,
            kind=kind,
            location=location,
            options=spec.options or {},
            interval_hours=spec.interval_hours,
            cron=cron,
            grace_hours=spec.grace_hours,
            created_by=user,
        )
        changes = {"kind": [None, kind], "location": [None, location], "collection": [None, collection.pk]}
        audit_record(action="source.added", obj=source, changes=changes, default_actor=user)
        source_schedule_save(source)
        if first_sync:
            source_sync_queue(source=source, trigger=first_sync, first=True)
    return source


def source_cron_checked(cron: str) -> str:
    """The cron expression, refused when it is none or would sync more often than once an hour."""
    cron = " ".join(cron.split())
    if cron:
        from croniter import croniter

        if not croniter.is_valid(cron):
            raise KnowledgeError(f"{cron!r} is not a cron expression (minute hour day month weekday)")
        gap = _shortest_gap(cron)
        if gap < MIN_SCHEDULE_GAP:
            raise KnowledgeError(
                f"{cron!r} would sync again after {_duration(gap)}; a source syncs by itself at most once "
                "an hour: name one minute of the hour, such as '0 * * * *' or '30 6 * * 1-5'"
            )
    return cron


def _shortest_gap(cron: str, start: datetime.datetime | None = None) -> datetime.timedelta:
    """The shortest time between two firings of ``cron`` among its next ones (server time, as the
    workers' scheduler reads it)."""
    from croniter import CroniterError, croniter

    try:
        firings = croniter(cron, start or timezone.localtime())
        times = [firings.get_next(datetime.datetime) for _ in range(CRON_FIRINGS_CHECKED)]
    except CroniterError as exc:
        raise KnowledgeError(f"{cron!r} cannot be scheduled ({exc})") from exc
    # As instants: aware times of one zone subtract as wall clocks, and a DST change would make an
    # hourly cron's gap 0 or 2 hours.
    instants = [moment.astimezone(datetime.UTC) for moment in times]
    return min(later - earlier for earlier, later in itertools.pairwise(instants))


def _duration(gap: datetime.timedelta) -> str:
    seconds = int(gap.total_seconds())
    count, unit = (seconds // 60, "minute") if seconds >= 60 else (seconds, "second")
    return f"{count} {unit}{'' if count == 1 else 's'}"


def source_schedule_save(source: Source) -> None:
    """The django-q2 schedule that syncs ``source`` by itself: every ``interval_hours``, or on its
    ``cron``; none when it has neither. The workers' scheduler runs it (any number of workers: the
    schedule is taken by one of them)."""
    from django_q.models import Schedule

    name = schedule_name(source.pk)
    if not source.interval_hours and not source.cron:
        Schedule.objects.filter(name=name).delete()
        return
    timing = (
        {"schedule_type": Schedule.CRON, "cron": source.cron, "minutes": None}
        if source.cron
        else {"schedule_type": Schedule.MINUTES, "minutes": source.interval_hours * 60, "cron": None}
    )
    # Not now: the first sync of a new source is queued by whoever added it, and a schedule changed
    # must not sync at once (an edit would be a way round the schedule's gap).
    first = timezone.now() + datetime.timedelta(minutes=timing["minutes"] or 0)
    if source.cron:
        from croniter import croniter

        first = croniter(source.cron, timezone.localtime()).get_next(datetime.datetime)
    Schedule.objects.update_or_create(
        name=name,
        defaults={
            "func": SYNC_TASK,
            "args": f"{source.pk}, 'schedule'",
            "repeats": -1,
            "next_run": first,
            "cluster": long_work_queue(),  # its scheduler queues it there, for the long-work workers
            **timing,
        },
    )


def schedule_name(source_id: int) -> str:
    return f"knowledge-source-{source_id}"


def source_location_check(kind: str, location: str, *, operator: bool) -> None:
    """Refuse now a location its first sync would refuse. A web or Git location's host is looked up:
    the lookup of a name the user chose may take the resolver's whole timeout, so the database
    connection is given back first (not inside a transaction: the admin's form runs in one)."""
    if kind not in Source.Kind.values:
        raise KnowledgeError(f"unknown kind of source {kind!r}: choose web, git or folder")
    if kind == Source.Kind.WEB:
        parts = urlsplit(location)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise KnowledgeError(f"{location!r} is not an http or https URL")
        if parts.username or parts.password:
            # It would be stored with the source and shown to every reader of the collection.
            raise KnowledgeError("a source's address may not hold a user name or password")
        release_connections()
        web_url_checked(location)
    elif kind == Source.Kind.GIT:
        if not operator and not location.startswith("https://"):
            # A local repository reads the server's disk; ssh logs in with the server's own keys.
            raise KnowledgeError("only operators may follow a local repository or an ssh URL; use https://")
        release_connections()
        git_url_checked(location)
    else:
        if not operator:
            raise KnowledgeError("only operators may add a server folder as a source")
        folder_root_checked(location)


def source_preview(
    *, collection: Collection, location: str, kind: str = "", options: dict | None = None, user
) -> tuple[Source, list[str], str]:
    """What a first sync of the source would read: the unsaved source, up to PREVIEW_ITEMS items and a
    note (knowledge.source_fetch.readers.preview_items). Nothing is stored.

    A preview waits on a site the user chose. So it holds no database connection while it does (a
    few dozen previews of a site that drips would otherwise take every pooled connection), ends within
    KNOWLEDGE_SOURCES_PREVIEW_SECONDS, and runs in one of the user's KNOWLEDGE_SOURCES_PREVIEWS_PER_USER
    slots (429 past them), given back however it ends."""
    location = location.strip()
    kind = kind or source_kind_guess(location)
    draft = Source(collection=collection, kind=kind, location=location, options=options or {})
    with concurrency_slot(
        key=f"source_preview_{user.pk}",
        limit=settings.KNOWLEDGE_SOURCES_PREVIEWS_PER_USER,
        seconds=settings.KNOWLEDGE_SOURCES_PREVIEW_SECONDS,
        what="previews",
    ):
        release_connections()  # taken again after the network, to give the slot back
        source_location_check(kind, location, operator=user.is_staff)
        items, note = preview_items(draft)
    return draft, items, note


def source_sync(
    *,
    source: Source,
    trigger: str,
    wait: bool = False,
    on_stage: Callable[[str], None] | None = None,
    ticket: str = "",
):
    """Sync ``source`` now; with ``wait`` its documents are processed before this returns. ``ticket``:
    the request's, so a request delivered twice syncs once."""
    run = _sync_start(source, trigger, ticket)
    with SyncBeat(run.pk):
        return _sync_run(source, run, _Counts(run, on_stage), wait)


def _sync_run(source: Source, run: SourceSync, counts: _Counts, wait: bool) -> SourceSync:
    try:
        known = _known(source)
        reader = reader_for(source, known)
        for listed in reader.items():
            counts.seen.add(listed.key)
            _apply(source, known.get(listed.key), listed, counts, wait)
        _touch(counts.untouched)
        counts.run.errors.extend({"item": source.location, "reason": note} for note in reader.notes)
        if reader.complete:
            _remove_gone(source, counts)
        if reader.cursor:
            Source.objects.filter(pk=source.pk).update(cursor=reader.cursor)
            source.cursor = reader.cursor
    except SyncLost:
        return _sync_lost(run)
    except (SourceReadError, KnowledgeError) as exc:
        return _sync_finish(run, counts, error=str(exc))
    except Exception as exc:  # a reader's failure of any kind ends this sync, recorded, not silently
        logger.exception("Syncing source %s failed", source.pk)
        return _sync_finish(run, counts, error=f"the sync failed: {getattr(exc, 'reason', '') or exc}")
    except BaseException:  # stopped (a worker's timeout, Ctrl-C): recorded, then stopped
        _sync_finish(run, counts, error=INTERRUPTED)
        raise
    return _sync_finish(run, counts, wait=wait)


def source_sync_queued(*, source: Source, trigger: str, ticket: str = "") -> SourceSync:
    """The sync a worker runs: one a person asked for (its ``ticket``: a task delivered twice syncs
    once), or the schedule's, counted like "Sync now" against the owner's sync rate; a scheduled
    sync over that rate is skipped, recorded with the reason."""
    if trigger != SCHEDULE:
        return source_sync(source=source, trigger=trigger, ticket=ticket)
    if _running(source).exists():
        raise KnowledgeError(BEING_SYNCED)
    try:
        sync_rate_charge(source=source)
    except RateLimitedError:
        return SourceSync.objects.create(
            source=source, trigger=SCHEDULE, status=SourceSync.Status.FAILED, finished_at=timezone.now(),
            error=f"skipped: the collection's owner is over the rate of source syncs, "
            f"{throttle_rate_words('syncs')} (API_THROTTLE_SYNCS; scheduled ones count too); the schedule "
            "tries again at its next time",
        )  # fmt: skip
    return source_sync(source=source, trigger=SCHEDULE)


def sync_rate_charge(*, source: Source) -> None:
    """Count one sync against the collection owner's sync rate (API_THROTTLE_SYNCS), whoever or
    whatever asks for it: RateLimitedError over it. An operator's collection (no owner) is not counted."""
    if source.collection.owner_id is not None:
        throttle_charge(scope="syncs", ident=source.collection.owner_id)


# A sync's stage and counts are written at most this often (a repository of thousands of unchanged
# files would otherwise write its sync's row once a file).
_STAGE_INTERVAL_S = 0.5


class _Counts:
    def __init__(self, run: SourceSync, on_stage) -> None:
        self.run, self.on_stage = run, on_stage
        self.seen: set[str] = set()
        self.documents: list[int] = []
        self.untouched: list[int] = []  # unchanged items whose row needs only its seen_at
        self.written = 0.0

    def stage(self, text: str) -> None:
        if self.on_stage:
            self.on_stage(text)
        now = time.monotonic()
        if now - self.written < _STAGE_INTERVAL_S:
            return
        self.written = now
        self.run.stage = text[:300]
        if not sync_held(self.run).update(stage=self.run.stage, **self.numbers()):
            raise SyncLost

    def add(self, field: str) -> None:
        setattr(self.run, field, getattr(self.run, field) + 1)

    def fail(self, key: str, reason: str) -> None:
        self.add("failed")
        self.run.errors.append({"item": key, "reason": reason})

    def numbers(self) -> dict:
        fields = ("added", "updated", "unchanged", "deleted", "failed")
        return {field: getattr(self.run, field) for field in fields} | {"errors": self.run.errors}


def _sync_start(source: Source, trigger: str, ticket: str = "") -> SourceSync:
    with transaction.atomic():
        Source.objects.select_for_update().get(pk=source.pk)  # one sync of a source starts at a time
        if ticket and source.syncs.filter(ticket=ticket).exists():
            raise KnowledgeError("this sync was asked for once and has run already")
        if _running(source).exists():
            raise KnowledgeError(BEING_SYNCED)
        return SourceSync.objects.create(
            source=source, trigger=trigger, ticket=ticket, worker=worker_name(), beat_at=timezone.now()
        )


def _running(source: Source):
    syncs_fail_stale(sources=[source])
    return source.syncs.filter(status=SourceSync.Status.RUNNING)


def _known(source: Source) -> dict[str, SourceItem]:
    return {item.key: item for item in source.items.select_related("document")}


def _apply(source: Source, item: SourceItem | None, listed: Listed, counts: _Counts, wait: bool) -> None:
    counts.stage(f"reading {listed.key}")
    if listed.error:
        counts.fail(listed.key, listed.error)
        _item_save(source, item, listed, error=listed.error)
        return
    if listed.data is None:  # unchanged at the source, so not fetched (one that never read well waits)
        counts.add("unchanged")
        if item is not None and not item.error:
            _unchanged_save(source, item, listed, counts)
        return
    digest = hashlib.sha256(listed.data).hexdigest()
    if item is not None and item.document_id and not item.error and item.content_hash == digest:
        counts.add("unchanged")  # served again, the same bytes
        _unchanged_save(source, item, listed, counts)
        return
    _upload(source, item, listed, digest, counts, wait)


def _upload(
    source: Source, item: SourceItem | None, listed: Listed, digest: str, counts: _Counts, wait: bool
) -> None:
    try:
        result = document_upload(
            collection=source.collection,
            uploaded_by=source.collection.owner,
            sync=True if wait else None,
            upload=DocumentUpload(filename=listed.filename, data=listed.data),
        )
    except KnowledgeError as exc:
        counts.fail(listed.key, str(exc))
        _item_save(source, item, listed, error=str(exc))
        return
    document = result.document
    Document.objects.filter(pk=document.pk).update(origin_url=listed.origin_url)
    if wait:
        document.refresh_from_db()
        if document.status == Document.Status.FAILED:
            counts.fail(listed.key, document.error)
            _item_save(source, item, listed, error=document.error)
            return
    counts.add("updated" if item is not None and item.document_id else "added")
    if result.created:  # the same bytes already in the collection were embedded before
        counts.documents.append(document.pk)
    _item_save(source, item, listed, document=document, owns_document=result.created, content_hash=digest)


def _unchanged_save(source: Source, item: SourceItem, listed: Listed, counts: _Counts) -> None:
    """An unchanged item's row is written only when its validators or gone mark moved; the others'
    seen_at is set once, at the end of the sync, for all of them (_touch)."""
    moved = (listed.etag, listed.last_modified) != (item.etag, item.last_modified) or item.gone_since
    if moved or (listed.origin_url and listed.origin_url != item.origin_url):
        _item_save(source, item, listed)
    else:
        counts.untouched.append(item.pk)


def _touch(item_ids: list[int]) -> None:
    SourceItem.objects.filter(pk__in=item_ids).update(seen_at=timezone.now())


def _item_save(source: Source, item: SourceItem | None, listed: Listed, **fields) -> None:
    values = {
        "origin_url": listed.origin_url or (item.origin_url if item else ""),
        "etag": listed.etag,
        "last_modified": listed.last_modified,
        "seen_at": timezone.now(),
        "gone_since": None,
        "error": fields.pop("error", ""),
        **fields,
    }
    if item is None:
        SourceItem.objects.create(source=source, key=listed.key, **values)
    else:
        SourceItem.objects.filter(pk=item.pk).update(**values)


def _remove_gone(source: Source, counts: _Counts) -> None:
    """Items the source no longer holds: marked gone, and removed once gone for the grace period."""
    now = timezone.now()
    grace = datetime.timedelta(hours=source.grace_hours)
    for item in source.items.exclude(key__in=counts.seen).select_related("document"):
        if item.gone_since is None:
            item.gone_since = now
            item.save(update_fields=["gone_since"])
        if now - item.gone_since < grace:
            continue
        counts.stage(f"removing {item.key}")
        if not sync_held(counts.run).exists():  # taken for dead: another sync may run; delete nothing
            raise SyncLost
        document, owned = item.document, item.owns_document
        item.delete()
        # Only a document the source made goes (not the same bytes a user uploaded before), and only
        # with the last item that has it.
        if document is not None and owned and not SourceItem.objects.filter(document=document).exists():
            document_delete(document=document)
        counts.add("deleted")


def _sync_finish(run: SourceSync, counts: _Counts, *, error: str = "", wait: bool = False) -> SourceSync:
    values = {
        **counts.numbers(),
        "status": SourceSync.Status.FAILED if error else SourceSync.Status.SUCCEEDED,
        "error": error,
        "stage": "",
        "document_ids": counts.documents,
        "finished_at": timezone.now(),
    }
    if wait:
        values["chunks_embedded"] = Chunk.objects.filter(document_id__in=counts.documents).count()
    if not sync_held(run).update(**values):
        return _sync_lost(run)  # the sweep's verdict stands: another sync may have started since
    for field, value in values.items():
        setattr(run, field, value)
    return run


def _sync_lost(run: SourceSync) -> SourceSync:
    logger.warning("Sync %s was taken for dead while it ran; it stopped without writing more", run.pk)
    run.refresh_from_db()
    return run


def sync_report(run: SourceSync) -> dict:
    """The one JSON object `knowledge_sync --json` prints (other tools read it: keep its keys)."""
    return {
        "source": run.source_id,
        "added": run.added,
        "updated": run.updated,
        "unchanged": run.unchanged,
        "deleted": run.deleted,
        "failed": run.failed,
        "chunks_embedded": run.chunks_embedded,
        "errors": [f"{e['item']}: {e['reason']}" for e in run.errors] + ([run.error] if run.error else []),
    }


def source_sync_queue(*, source: Source, trigger: str, first: bool = False, counted: bool = True) -> None:
    """ "Sync now" from a page or the API: the sync runs on a worker (a site can take minutes).

    ``first``: the sync that adding a source starts, which its "source.added" event already records.
    ``counted``: against the collection owner's sync rate (an operator's, in the admin, is not).
    """
    if _running(source).exists():
        raise KnowledgeError(BEING_SYNCED)
    if counted:
        sync_rate_charge(source=source)
    ticket = uuid.uuid4().hex  # the task's, so that a task delivered twice syncs once
    with transaction.atomic():  # recorded only if the sync is queued, which the commit does
        if not first:
            audit_record(action="source.synced", obj=source, changes={"trigger": [None, trigger]})
        transaction.on_commit(
            lambda: task_queue(
                SYNC_TASK,
                source.pk,
                trigger,
                ticket,
                queue=long_work_queue(),
                task_name=f"sync-source-{source.pk}",
            )
        )


def source_delete(*, source: Source) -> None:
    """Stop following a source; the documents it brought stay in the collection."""
    from django_q.models import Schedule

    with transaction.atomic():
        Schedule.objects.filter(name=schedule_name(source.pk)).delete()
        audit_record(action="source.removed", obj=source)
        source.delete()
