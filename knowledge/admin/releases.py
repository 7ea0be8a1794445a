"""Releases and chunk profiles in the admin: what an index is cut with and how it is released.

A release shows its gate report; promote or discard a candidate or held one, roll a collection back
(docs/design.md#releases). The services do the work, in one transaction each. A chunk profile says how
documents are cut, fixed once a collection or a release uses it (ChunkProfile.CUTTING_FIELDS says why):
cutting differently is a new profile and a re-index, measured by the gate as a new release."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from config.base.errors import KnowledgeError
from knowledge.models import ChunkProfile, Release
from knowledge.services.releases import release_discard, release_promote, release_rollback
from knowledge.services.releases_report import gate_metrics, release_summary_lines


def gate_decision(release: Release) -> str:
    gate = gate_metrics(release)
    if gate is None:
        return "—"
    if not gate["questions"]:
        return "nothing to measure"
    return f"{gate['decision']}: recall@5 {gate['serving']['recall@5']} → {gate['recall@5']}"


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "collection",
        "state",
        "chunk_profile",
        "embedding_model",
        "gate_decision",
        "created_at",
    ]
    list_filter = ["state", "embedding_model", "chunk_profile"]
    list_select_related = ["collection", "chunk_profile"]
    search_fields = ["collection__name", "reason"]
    actions = ["promote", "discard"]
    readonly_fields = [
        "collection",
        "state",
        "chunk_profile",
        "embedding_model",
        "embedding_backend",
        "parser_version",
        "extraction_version",
        "product_version",
        "reason",
        "report",
        "created_by",
        "created_at",
        "built_at",
        "promoted_at",
        "retired_at",
    ]
    exclude = ["gate"]

    def has_add_permission(self, request):
        return False  # a release is built by a re-index, never typed in

    def has_delete_permission(self, request, obj=None):
        return False  # discarding (the action) also drops its chunks; a bare delete would orphan them

    @admin.display(description="gate")
    def gate_decision(self, obj):
        return gate_decision(obj)

    @admin.display(description="gate report")
    def report(self, obj):
        return format_html(
            '<pre style="white-space:pre-wrap">{}</pre>',
            "\n".join(release_summary_lines(obj)),
        )

    @admin.action(description="Promote the selected release (it serves at once)")
    def promote(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one release to promote.", messages.ERROR)
            return
        try:
            release = release_promote(
                release=queryset.get(), actor=request.user, reason="promoted by an operator"
            )
        except KnowledgeError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        self.message_user(request, f"Release {release.pk} of {release.collection} serves now.")

    @admin.action(description="Discard the selected releases (their chunks are deleted)")
    def discard(self, request, queryset):
        for release in queryset.select_related("collection"):
            try:
                deleted = release_discard(release=release, actor=request.user)
            except KnowledgeError as exc:
                self.message_user(request, str(exc), messages.ERROR)
                continue
            self.message_user(request, f"Release {release.pk} discarded ({deleted} chunks deleted).")


@admin.display(description="releases")
def releases_table(collection) -> str:
    """The collection's releases, newest first, each linked to its report (a read-only field, not
    an inline: an inline would make every save of the collection's form carry its rows)."""
    if collection is None or collection.pk is None:
        return "—"
    rows = format_html_join(
        "",
        '<tr><td><a href="{}">release {}</a></td>' + "<td>{}</td>" * 5 + "</tr>",
        (
            (
                reverse("admin:knowledge_release_change", args=[r.pk]),
                r.pk,
                r.state,
                r.chunk_profile.name,
                r.embedding_model,
                gate_decision(r),
                r.reason,
            )
            for r in collection.releases.select_related("chunk_profile").order_by("-pk")[:20]
        ),
    )
    columns = ("release", "state", "chunk profile", "model", "gate", "reason")
    header = format_html_join("", "<th>{}</th>", ((c,) for c in columns))
    return format_html("<table><tr>{}</tr>{}</table>", header, rows)


@admin.action(description="Roll back to the release that served before (at once, nothing re-embedded)")
def rollback(model_admin, request, queryset):
    for collection in queryset:
        try:
            done = release_rollback(collection=collection, actor=request.user)
        except KnowledgeError as exc:
            model_admin.message_user(request, f"{collection}: {exc}", messages.ERROR)
            continue
        queued = (
            f"; {done.documents_queued} document(s) changed since are re-read"
            if done.documents_queued
            else ""
        )
        model_admin.message_user(request, f"{collection}: release {done.serving.pk} serves again{queued}.")


@admin.register(ChunkProfile)
class ChunkProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "strategy", "chunk_size", "chunk_overlap", "is_active", "created_at"]
    list_filter = ["strategy", "is_active"]
    search_fields = ["name"]
    audit_name = "chunk_profile"

    def get_readonly_fields(self, request, obj=None):
        """How a profile in use cuts is shown, not edited (ChunkProfile.CUTTING_FIELDS says why)."""
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.in_use():
            readonly += ChunkProfile.CUTTING_FIELDS
        return readonly

    def change_view(self, request, object_id, form_url="", extra_context=None):
        profile = self.get_object(request, object_id)
        if request.method == "GET" and profile is not None and profile.in_use():
            messages.info(
                request,
                "Collections' chunks were cut with this profile, so its strategy, size and overlap are "
                "fixed. To cut differently, add a profile and re-index under it: the gate measures the "
                "new release before it serves.",
            )
        return super().change_view(request, object_id, form_url, extra_context)
