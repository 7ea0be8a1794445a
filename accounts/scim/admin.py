"""The admin's SCIM tokens: made here (the secret shown once, on the page after saving), revoked by
an action; and the SCIM links of accounts and teams, read-only (SCIM itself changes them)."""

from __future__ import annotations

from django.contrib import admin
from django.template.response import TemplateResponse

from accounts.models import ScimAccount, ScimGroup, ScimToken
from accounts.scim.http import location
from accounts.scim.tokens import scim_token_create, scim_token_revoke

CREATED_TEMPLATE = "admin/accounts/scimtoken/created.html"


@admin.register(ScimToken)
class ScimTokenAdmin(admin.ModelAdmin):
    audit_name = "scim_token"
    list_display = ["name", "source", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["source"]
    search_fields = ["name", "source", "prefix"]
    actions = ["revoke_tokens"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["name", "source"]
        return ["name", "source", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request, obj=None):
        # Only the name changes: the source owns what the token made, and a revoke is never undone.
        return [] if obj is None else ["source", "prefix", "created_at", "last_used_at", "revoked_at"]

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        token, secret = scim_token_create(name=obj.name, source=obj.source)
        for name in ("pk", "prefix", "key_hash", "created_at"):
            setattr(obj, name, getattr(token, name))
        obj._state.adding = False
        form.instance = token
        request.scim_secret = secret  # shown by response_add, never stored

    def response_add(self, request, obj, post_url_continue=None):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "SCIM token made",
            "token": obj,
            "secret": request.scim_secret,
            "scim_url": location(""),
        }
        # The admin's views are never_cache: the page with the secret is not kept by the browser.
        return TemplateResponse(request, CREATED_TEMPLATE, context)

    @admin.action(description="Revoke selected SCIM tokens")
    def revoke_tokens(self, request, queryset):
        active = list(queryset.filter(revoked_at__isnull=True))
        for token in active:
            scim_token_revoke(token=token)
        self.message_user(request, f"Revoked {len(active)} SCIM token(s).")


@admin.register(ScimAccount)
class ScimAccountAdmin(admin.ModelAdmin):
    """Which accounts a SCIM source provisioned. Deleting a link leaves the account to the operator
    (SCIM no longer sees it)."""

    audit_name = "scim_account"
    list_display = ["user", "source", "external_id", "deleted_at", "updated_at"]
    list_filter = ["source"]
    list_select_related = ["user"]
    search_fields = ["user__username", "external_id"]
    readonly_fields = ["user", "source", "external_id", "created_at", "updated_at", "deleted_at"]

    def has_add_permission(self, request):
        return False


@admin.register(ScimGroup)
class ScimGroupAdmin(admin.ModelAdmin):
    audit_name = "scim_group"
    list_display = ["team", "source", "external_id", "updated_at"]
    list_filter = ["source"]
    list_select_related = ["team"]
    search_fields = ["team__name", "external_id"]
    readonly_fields = ["team", "source", "external_id", "created_at", "updated_at"]

    def has_add_permission(self, request):
        return False
