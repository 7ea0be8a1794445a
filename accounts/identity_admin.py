"""Operator admin for the identity features: which provider groups give which teams, who joined
a team through a provider, and the default-password flag. Provider apps themselves are allauth's
SocialApp admin (recorded like every model, by accounts.admin_site)."""

from __future__ import annotations

from allauth.socialaccount.admin import SocialAppAdmin, SocialAppForm
from allauth.socialaccount.models import SocialApp
from django import forms
from django.contrib import admin

from accounts.models import AccountPolicy, DirectoryAccount, TeamGrant, TeamMapping
from config.base.identity import idp_from_metadata, metadata_url_allowed


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


@admin.register(DirectoryAccount)
class DirectoryAccountAdmin(admin.ModelAdmin):
    """Which accounts an LDAP directory signs in (by DN). Deleting a link unlinks the account: the
    directory user with that DN is then refused while a local account has the name."""

    audit_name = "directory_account"
    list_display = ["user", "username", "dn", "checked_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "username", "dn"]
    raw_id_fields = ["user"]
    readonly_fields = ["checked_at"]


class IdentityProviderAppForm(SocialAppForm):
    """allauth's app form, plus a SAML provider's metadata file: read into the app's settings
    (entity id, sign-in address, signing certificate) when uploaded."""

    idp_metadata_file = forms.FileField(
        required=False,
        label="SAML provider metadata file",
        help_text="SAML only: the identity provider's metadata XML. Replaces settings' \"idp\".",
    )

    def clean(self):
        data = super().clean()
        if data.get("provider") != "saml":
            return data
        settings = dict(data.get("settings") or {})
        upload = data.get("idp_metadata_file")
        if upload is not None:
            try:
                settings["idp"] = idp_from_metadata(upload.read().decode("utf-8", "replace"))
            except ValueError as exc:
                raise forms.ValidationError({"idp_metadata_file": str(exc)}) from exc
        _check_saml_idp(settings.get("idp"))
        data["settings"] = settings
        return data


def _check_saml_idp(idp) -> None:
    if not isinstance(idp, dict) or not (idp.get("metadata_url") or idp.get("sso_url")):
        raise forms.ValidationError(
            'A SAML app needs a metadata file, or settings {"idp": {"metadata_url": ..., "entity_id": ...}}.'
        )
    if idp.get("metadata_url") and not (metadata_url_allowed(idp["metadata_url"]) and idp.get("entity_id")):
        raise forms.ValidationError("The metadata URL must be https and come with the provider's entity_id.")


admin.site.unregister(SocialApp)


@admin.register(SocialApp)
class IdentityProviderAppAdmin(SocialAppAdmin):
    form = IdentityProviderAppForm
