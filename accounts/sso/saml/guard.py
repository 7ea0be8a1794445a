"""SAML apps saved anywhere (the admin, a shell, a data migration) keep the safe settings, and a
provider id of their own, in the database too: what the admin shows is what is enforced."""

from __future__ import annotations

from allauth.socialaccount.models import SocialApp
from django.db.models.signals import pre_save

from accounts.sso.saml.provider import safe_settings


def connect() -> None:
    pre_save.connect(_saml_app_saving, sender=SocialApp, dispatch_uid="saml-app-safe-settings")


def _saml_app_saving(sender, instance: SocialApp, **kwargs) -> None:
    if instance.provider != "saml":
        return
    instance.settings = safe_settings(instance.settings)
    # Accounts are told apart by (provider id, user id): two SAML apps sharing allauth's default
    # id "saml" would let one provider's user sign in as the other's.
    if not instance.provider_id:
        instance.provider_id = instance.client_id
