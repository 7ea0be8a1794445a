"""The audit log's one recorder: ``audit_record`` writes an AuditEvent in the caller's transaction.

Who acts, from where and through which door (page, api, admin, mcp, command, worker) comes from
the request's audit context: ``AuditContextMiddleware`` sets it for pages, the API and the
admin, the MCP server and the management commands set it with ``audit_context``. Without one
(a task on a worker) the channel is "worker". The context costs no query: the actor and the
address are read from the request only when an event is recorded.

A record is written in the same transaction as the change it describes: a rolled-back change
leaves no record, and a failed write raises (and so rolls the change back) instead of being lost.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from accounts.client_address import client_address
from accounts.models import AuditEvent
from config.base.errors import KnowledgeError

# What a secret's value is recorded as: that it changed, never what it is.
CHANGED = "(changed)"
_SECRET_NAME = re.compile(r"password|secret|api_key|key_hash|share_token|^token$", re.IGNORECASE)
# The trigger lets a DELETE through only with both set, and only of rows older than the cutoff
# (accounts migration 0006).
PURGE_SETTING = "knowledge.audit_purge"
PURGE_BEFORE_SETTING = "knowledge.audit_purge_before"


@dataclass
class AuditContext:
    channel: str
    actor: Any = None
    address: str = ""
    request: Any = None
    # Who acts when it is no account: a SCIM client, named by its token ("scim:entra/Entra ID").
    actor_label: str = ""
    # {(object_type, object_id): {verb: fields its changes named}} recorded in this context: the
    # admin's own record of the same kind of change skips them, so an admin action that calls a
    # recording service leaves one record, not two; a service's record of another kind (a re-index)
    # hides only the fields it named.
    recorded: dict[tuple[str, str], dict[str, set[str]]] = field(default_factory=dict)


_current: ContextVar[AuditContext | None] = ContextVar("audit_context", default=None)


@contextmanager
def audit_context(
    *, channel: str, actor=None, address: str = "", request=None, actor_label: str = ""
) -> Iterator[AuditContext]:
    """Record what runs inside as done through ``channel`` by ``actor`` (or the request's user, or,
    with neither, the one named ``actor_label``)."""
    context = AuditContext(
        channel=channel, actor=actor, address=address, request=request, actor_label=actor_label
    )
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def command_audited(handle):
    """Decorates a management command's ``handle``: what it records is done through channel "command"."""

    @functools.wraps(handle)
    def handle_audited(self, *args, **options):
        with audit_context(channel=AuditEvent.Channel.COMMAND):
            return handle(self, *args, **options)

    return handle_audited


@dataclass(frozen=True)
class AuditSubject:
    """What an event names when there is no instance to read it from: a row deleted already, a user
    that does not exist (a failed log-in)."""

    object_type: str = ""
    object_id: Any = ""
    object_repr: str = ""


def audit_record(
    *,
    action: str,
    obj: Model | AuditSubject | None = None,
    changes: dict | None = None,
    actor=None,
    default_actor=None,
) -> AuditEvent:
    """Write one event; ``obj`` (an instance, or an ``AuditSubject`` naming one) is what it was done to.

    The actor is ``actor``, else the context's (the request's signed-in user), else
    ``default_actor`` (who acts when nobody is signed in, e.g. the owner of a password reset).
    ``changes`` is {field: [before, after]}; a secret's values are replaced by "(changed)".
    Call it before deleting ``obj``: a deleted instance has no primary key left.
    """
    context = _current.get() or AuditContext(channel=AuditEvent.Channel.WORKER)
    subject = _subject(obj)
    event = _unsaved_event(
        context,
        action=action,
        actor=actor or _context_actor(context) or default_actor,
        object_type=subject.object_type,
        object_id=subject.object_id,
        object_repr=subject.object_repr,
        changes=changes,
    )
    event.save()
    _remember(context, event)
    return event


def _subject(obj: Model | AuditSubject | None) -> AuditSubject:
    if obj is None:
        return AuditSubject()
    if isinstance(obj, AuditSubject):
        return obj
    return AuditSubject(obj._meta.label_lower, obj.pk, str(obj))


def audit_record_each(
    *, action: str, objs: list[Model], changes: dict | None = None, default_actor=None
) -> list[AuditEvent]:
    """One event about each of ``objs``, with the same ``changes``, written in one INSERT (a bulk change)."""
    context = _current.get() or AuditContext(channel=AuditEvent.Channel.WORKER)
    actor = _context_actor(context) or default_actor
    events = [
        _unsaved_event(
            context,
            action=action,
            actor=actor,
            object_type=obj._meta.label_lower,
            object_id=obj.pk,
            object_repr=str(obj),
            changes=changes,
        )
        for obj in objs
    ]
    AuditEvent.objects.bulk_create(events)
    for event in events:
        _remember(context, event)
    return events


def _unsaved_event(context, *, action, actor, object_type, object_id, object_repr, changes) -> AuditEvent:
    return AuditEvent(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else context.actor_label[:150],
        address=_address(context),
        channel=context.channel,
        action=action,
        object_type=object_type,
        object_id="" if object_id is None else str(object_id),
        object_repr=str(object_repr)[:200],
        changes=_redacted(changes or {}),
    )


def _remember(context: AuditContext, event: AuditEvent) -> None:
    verbs = context.recorded.setdefault((event.object_type, event.object_id), {})
    verbs.setdefault(event.action.rsplit(".", 1)[-1], set()).update(event.changes)


def audit_recorded(*, object_type: str, object_id: Any, verbs: frozenset[str]) -> bool:
    """Whether this request (or command) recorded an event about the object whose action ends in
    one of ``verbs`` (``collection.changed``: "changed")."""
    return not verbs.isdisjoint(_recorded_verbs(object_type, object_id))


def audit_recorded_fields(*, object_type: str, object_id: Any) -> set[str]:
    """The fields this request's (or command's) events about the object named in their changes."""
    return set().union(*_recorded_verbs(object_type, object_id).values())


def _recorded_verbs(object_type: str, object_id: Any) -> dict[str, set[str]]:
    context = _current.get()
    return context.recorded.get((object_type, str(object_id)), {}) if context is not None else {}


def audit_changes(before: dict, after: dict) -> dict:
    """{field: [before, after]} for the fields whose value differs (JSON-safe values)."""
    return {
        name: [_plain(before.get(name)), _plain(value)]
        for name, value in after.items()
        if _plain(before.get(name)) != _plain(value)
    }


def audit_values(obj: Model, fields) -> dict:
    """The named fields' current values (foreign keys as ids), to diff with ``audit_changes``."""
    return {name: getattr(obj, obj._meta.get_field(name).attname) for name in fields}


def audit_actor():
    """Who is acting in this request or command (None for the workers and anonymous requests): the
    user a record made now would name."""
    context = _current.get()
    return _context_actor(context) if context is not None else None


def _context_actor(context: AuditContext):
    if context.actor is not None:
        return context.actor
    user = getattr(context.request, "user", None)  # the API's token user once DRF authenticated it
    return user if user is not None and user.is_authenticated else None


def _address(context: AuditContext) -> str:
    if context.request is not None:
        return client_address(context.request)[:64]
    return context.address[:64]


def _redacted(changes: dict) -> dict:
    return {
        name: [CHANGED, CHANGED] if _SECRET_NAME.search(name) else [_redacted_value(v) for v in values]
        for name, values in changes.items()
    }


def _redacted_value(value):
    """A row's fields (the admin's inline rows are {field: value}) are redacted by their own names."""
    if isinstance(value, dict):
        return {name: CHANGED if _SECRET_NAME.search(name) else _plain(v) for name, v in value.items()}
    return _plain(value)


def _plain(value):
    """A JSON value: model instances as their id, dates as ISO text, sets and querysets as lists."""
    if isinstance(value, Model):
        return value.pk
    if isinstance(value, File):  # iterating a file would copy its content into the log
        return value.name
    if hasattr(value, "__iter__") and not isinstance(value, str | bytes | dict | list | tuple):
        value = [item.pk if isinstance(item, Model) else item for item in value]
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder, default=str))


def audit_events_purge(*, now: datetime.datetime | None = None) -> int:
    """Delete events older than KNOWLEDGE_AUDIT_RETENTION_DAYS (0: keep forever); returns how many.

    The only DELETE the append-only trigger allows: it sets the purge flag and the cutoff for this
    transaction only, and the trigger refuses any row not older than that cutoff. A ``now`` in the
    future (a cutoff inside the retention period) is refused here, before anything is deleted.
    """
    days = settings.KNOWLEDGE_AUDIT_RETENTION_DAYS
    if not days:
        return 0
    retention = datetime.timedelta(days=days)
    cutoff = (now or timezone.now()) - retention
    if cutoff > timezone.now() - retention:
        raise KnowledgeError(f"refused: events newer than the {days}-day retention are kept")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config(%s, 'on', true)", [PURGE_SETTING])
            cursor.execute("SELECT set_config(%s, %s, true)", [PURGE_BEFORE_SETTING, cutoff.isoformat()])
            cursor.execute(f"DELETE FROM {AuditEvent._meta.db_table} WHERE at < %s", [cutoff])
            return cursor.rowcount
