"""Operator admin for the identity features: which provider groups give which teams, who joined
a team through a provider, and the default-password flag. Provider apps themselves are allauth's
SocialApp admin (recorded like every model, by accounts.admin_site)."""

from __future__ import annotations

from django.contrib import admin

from accounts.models import AccountPolicy, TeamGrant, TeamMapping


@admin.register(TeamMapping)
class TeamMappingAdmin(admin.ModelAdmin):
    audit_name = "team_mapping"
    list_display = ["source", "external_group", "team"]
    list_filter = ["source"]
    list_select_related = ["team"]
    search_fields = ["source", "external_group", "team__name"]
    raw_id_fields = ["team"]


@admin.register(TeamGrant)
class TeamGrantAdmin(admin.ModelAdmin):
    """Read-only: grants are what the last sign-in's sync found; remove a team in the user's page."""

    list_display = ["user", "team", "source"]
    list_filter = ["source"]
    list_select_related = ["user", "team"]
    search_fields = ["user__username", "team__name", "source"]
    readonly_fields = ["user", "team", "source"]

    def has_add_permission(self, request):
        return False


@admin.register(AccountPolicy)
class AccountPolicyAdmin(admin.ModelAdmin):
    audit_name = "account_policy"
    list_display = ["user", "must_change_password"]
    list_select_related = ["user"]
    search_fields = ["user__username"]
    raw_id_fields = ["user"]
