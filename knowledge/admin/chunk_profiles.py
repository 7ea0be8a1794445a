"""Chunk profiles in the admin: how documents are cut, fixed once a collection or a release uses the
profile (ChunkProfile.CUTTING_FIELDS says why)."""

from __future__ import annotations

from django.contrib import admin, messages

from knowledge.models import ChunkProfile


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
