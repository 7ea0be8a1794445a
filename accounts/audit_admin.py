"""The audit log in the admin: read-only, filtered and searched, exported as CSV or JSON Lines.

Nothing here can add, change or delete an event (the database refuses it too: see migration 0005).
The exports stream the changelist's current selection (its filters and search) in batches.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpResponseBadRequest, StreamingHttpResponse
from django.urls import path
from django.utils.html import format_html, format_html_join

from accounts.models import AuditEvent

EXPORT_BATCH = 1000
EXPORT_FIELDS = [
    "id",
    "at",
    "actor_name",
    "address",
    "channel",
    "action",
    "object_type",
    "object_id",
    "object_repr",
    "changes",
]
# A spreadsheet runs a cell starting with one of these as a formula; names and titles are user input.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "actor_name", "address", "channel", "action", "object_shown"]
    list_filter = ["action", "channel", "at"]
    search_fields = ["actor_name", "object_repr", "address"]
    date_hierarchy = "at"
    fields = [*EXPORT_FIELDS[1:9], "changes_shown"]
    readonly_fields = fields
    actions = None  # no "delete selected"
    change_list_template = "admin/accounts/auditevent/change_list.html"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="object")
    def object_shown(self, event):
        return f"{event.object_type} {event.object_id}: {event.object_repr}" if event.object_type else ""

    @admin.display(description="changes")
    def changes_shown(self, event):
        if not event.changes:
            return "-"
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            ((name, _shown(values, 0), _shown(values, 1)) for name, values in event.changes.items()),
        )
        return format_html("<table><tr><th>field</th><th>before</th><th>after</th></tr>{}</table>", rows)

    def get_urls(self):
        export = path(
            "export/<str:fmt>/",
            self.admin_site.admin_view(self.export_view),
            name="accounts_auditevent_export",
        )
        return [export, *super().get_urls()]

    def export_view(self, request, fmt: str):
        """The changelist's current selection (same filters and search) as a streamed file."""
        if fmt not in ("csv", "jsonl") or not self.has_view_permission(request):
            raise Http404("no such export")
        try:
            events = self.get_changelist_instance(request).get_queryset(request)
        except (IncorrectLookupParameters, ValidationError) as exc:
            message = "; ".join(getattr(exc, "messages", [])) or str(exc)
            return HttpResponseBadRequest(f"bad filter: {message}", content_type="text/plain; charset=utf-8")
        lines = _csv_lines(events) if fmt == "csv" else _jsonl_lines(events)
        content_type = "text/csv" if fmt == "csv" else "application/jsonl"
        response = StreamingHttpResponse(lines, content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="audit-events.{fmt}"'
        return response


def _shown(values, index: int) -> str:
    value = values[index] if isinstance(values, list) and len(values) > index else None
    return "-" if value is None else json.dumps(value, ensure_ascii=False, cls=DjangoJSONEncoder)


def events_in_batches(events) -> Iterator[AuditEvent]:
    """Newest first, EXPORT_BATCH rows per query: no cursor held open while the client reads."""
    events = events.order_by("-id")
    last_id = None
    while True:
        batch = list((events if last_id is None else events.filter(id__lt=last_id))[:EXPORT_BATCH])
        yield from batch
        if len(batch) < EXPORT_BATCH:
            return
        last_id = batch[-1].id


def _row(event: AuditEvent) -> dict:
    row = {name: getattr(event, name) for name in EXPORT_FIELDS}
    row["at"] = event.at.isoformat()
    return row


class _Line:
    """csv.writer's file: hands each written row back instead of keeping it."""

    def write(self, text: str) -> str:
        return text


def _csv_lines(events) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(EXPORT_FIELDS)
    for event in events_in_batches(events):
        row = _row(event)
        row["changes"] = json.dumps(row["changes"], ensure_ascii=False, cls=DjangoJSONEncoder)
        yield writer.writerow([_cell(row[name]) for name in EXPORT_FIELDS])


def _cell(value) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _jsonl_lines(events) -> Iterator[str]:
    for event in events_in_batches(events):
        yield json.dumps(_row(event), ensure_ascii=False, cls=DjangoJSONEncoder) + "\n"
