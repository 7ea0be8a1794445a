"""Operator admin for API tokens. The revoke action calls the same service as the pages and API."""

from __future__ import annotations

from django.contrib import admin

from accounts.models import ApiToken
from accounts.tokens import token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["user"]
    search_fields = ["name", "user__username", "prefix"]
    # Only the name is editable: the secret's hash and prefix identify it, and a revoke is never undone.
    readonly_fields = ["user", "prefix", "key_hash", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke_tokens"]

    def has_add_permission(self, request):
        return False  # users create their tokens: the secret is shown to them once, never stored

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request, queryset):
        active = list(queryset.filter(revoked_at__isnull=True).select_related("user"))
        for token in active:
            token_revoke(user=token.user, token_id=token.pk)
        self.message_user(request, f"Revoked {len(active)} token(s).")
