"""Operator admin for API tokens and users. Revoking calls the same services as the pages and API."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm

from accounts import audit_admin, identity_admin  # noqa: F401 (register their admins)
from accounts.api_tokens import token_revoke, tokens_revoke_all
from accounts.models import ApiToken
from accounts.scim import admin as scim_admin  # noqa: F401 (registers its admin)


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


class OperatorPasswordForm(AdminPasswordChangeForm):
    """An operator setting someone's password, like a reset, also revokes that user's API tokens."""

    def save(self, commit=True):
        user = super().save(commit=commit)
        if commit:
            self.revoked_tokens = tokens_revoke_all(user=user)
        return user


admin.site.unregister(get_user_model())


@admin.register(get_user_model())
class KnowledgeUserAdmin(UserAdmin):
    change_password_form = OperatorPasswordForm
