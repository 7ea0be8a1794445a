"""Sources in the admin: what each collection follows, how its syncs went, "Sync now"; operators may
add server folders (under KNOWLEDGE_SOURCES_FOLDER_ROOTS). Django's admin log records who added or
changed a source here; the API and the pages record who added it (``created_by``)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from config.base.errors import KnowledgeError
from knowledge.models import Source, SourceItem, SourceSync
from knowledge.services.sources import (
    source_cron_checked,
    source_delete,
    source_location_check,
    source_schedule_save,
    source_sync_queue,
)


class SourceSyncInline(admin.TabularInline):
    model = SourceSync
    extra = 0
    max_num = 0
    can_delete = False
    fields = ["started_at", "finished_at", "status", "trigger", "added", "updated", "unchanged", "deleted",
              "failed", "chunks_embedded", "error", "errors", "worker", "beat_at"]  # fmt: skip
    readonly_fields = fields
    ordering = ["-started_at"]


class SourceForm(forms.ModelForm):
    """Refuses, on the form, what the API refuses: a location outside what may be fetched or read."""

    class Meta:
        model = Source
        fields = ["collection", "kind", "location", "options", "interval_hours", "cron", "grace_hours"]

    def clean(self):
        data = super().clean()
        try:
            # The admin is for staff: operators, who may add server folders under the allowed roots.
            source_location_check(data.get("kind", ""), (data.get("location") or "").strip(), operator=True)
            data["cron"] = source_cron_checked(data.get("cron") or "")
        except KnowledgeError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    form = SourceForm
    actions = ["sync_now"]
    audit_name, audit_verbs = "source", {"deleted": "removed"}  # removal records itself (source_delete)
    list_display = ["location", "kind", "collection", "schedule", "last_sync", "created_by", "updated_at"]
    list_filter = ["kind"]
    search_fields = ["location", "collection__name"]
    readonly_fields = ["cursor", "disk_bytes", "created_by", "created_at", "updated_at"]
    raw_id_fields = ["collection"]
    inlines = [SourceSyncInline]

    @admin.display(description="Syncs by itself")
    def schedule(self, source: Source) -> str:
        if source.cron:
            return f"cron {source.cron}"
        return f"every {source.interval_hours} h" if source.interval_hours else "only when asked"

    @admin.display(description="Last sync")
    def last_sync(self, source: Source) -> str:
        run = source.syncs.first()
        if run is None:
            return "never"
        counts = f"{run.added} added, {run.updated} updated, {run.deleted} deleted, {run.failed} failed"
        return f"{run.get_status_display()} {run.started_at:%Y-%m-%d %H:%M}: {counts}"

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        elif {"location", "options", "kind"} & set(form.changed_data):
            obj.cursor = ""  # another repository, branch or patterns: the next sync reads everything
        super().save_model(request, obj, form, change)
        source_schedule_save(obj)

    def delete_model(self, request, obj):
        source_delete(source=obj)

    @admin.action(description="Sync the selected sources now")
    def sync_now(self, request, queryset):
        queued = 0
        for source in queryset:
            try:
                # An operator's: not counted against the owner's sync rate.
                source_sync_queue(source=source, trigger="admin", counted=False)
                queued += 1
            except KnowledgeError as exc:
                self.message_user(request, f"{source.location}: {exc}", messages.WARNING)
        self.message_user(request, f"Queued {queued} sync(s).")


@admin.register(SourceItem)
class SourceItemAdmin(admin.ModelAdmin):
    list_display = ["key", "source", "document", "seen_at", "gone_since", "error"]
    search_fields = ["key", "error"]
    readonly_fields = [f.name for f in SourceItem._meta.fields]

    def has_add_permission(self, request):
        return False
