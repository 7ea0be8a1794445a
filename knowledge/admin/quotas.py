"""Quotas in the admin: operators set limits per user or per group (blank = inherit), and read the
usage ledger. Resolution and enforcement are knowledge.quotas'."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html_join

from knowledge.models import Quota, UsageDay
from knowledge.quotas import LIMITS, quota_limits_for, quota_usage_for


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ["__str__", "unlimited", *LIMITS, "updated_at"]
    list_select_related = ["user", "group"]
    search_fields = ["user__username", "user__email", "group__name"]
    list_filter = ["unlimited"]
    autocomplete_fields = ["user", "group"]
    readonly_fields = ["in_effect", "updated_at"]
    fieldsets = [
        (None, {"fields": ["user", "group"], "description": "One user or one group, not both."}),
        ("Limits (blank = inherit)", {"fields": ["unlimited", *LIMITS]}),
        ("In effect", {"fields": ["in_effect", "updated_at"]}),
    ]

    @admin.display(description="In effect for this user (used / limit)")
    def in_effect(self, quota: Quota) -> str:
        if quota.user_id is None:
            return "a group's quota: each member's own override, then the most generous group, applies"
        limits, used = quota_limits_for(user_id=quota.user_id), quota_usage_for(user_id=quota.user_id)
        rows = ((name, used[name], "no limit" if limits[name] is None else limits[name]) for name in LIMITS)
        return format_html_join("", "<div>{}: {} / {}</div>", rows)


@admin.register(UsageDay)
class UsageDayAdmin(admin.ModelAdmin):
    """The ledger: written by questions and LLM calls, read-only here."""

    list_display = ["user", "day", "questions", "llm_tokens"]
    list_select_related = ["user"]
    search_fields = ["user__username"]
    date_hierarchy = "day"
    raw_id_fields = ["user"]
    readonly_fields = ["user", "day", "questions", "llm_tokens"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
