"""allauth's SAML provider with the safe settings forced on every app, env-defined or the admin's."""

from __future__ import annotations

import copy

from allauth.socialaccount.providers.saml.provider import SAMLProvider

from config.base.identity import SAML_FORCED_ADVANCED


def safe_settings(settings: dict | None) -> dict:
    """``settings`` with the forced ``advanced`` values over whatever it says."""
    safe = copy.deepcopy(settings or {})
    safe["advanced"] = {**(safe.get("advanced") or {}), **SAML_FORCED_ADVANCED}
    return safe


class SafeSAMLProvider(SAMLProvider):
    """Every view reaches an app's settings through its provider (allauth's build_saml_config reads
    ``provider.app.settings``), so forcing them here covers sign-in, the response and the metadata."""

    # Our urls.py in place of allauth's: the response view is ours (accounts/sso/saml/views.py).
    package = "accounts.sso.saml"

    def __init__(self, request, app=None) -> None:
        super().__init__(request, app)
        # A copy: the app object may be saved afterwards (the admin) and must keep what was written.
        self.app = copy.copy(self.app)
        self.app.settings = safe_settings(self.app.settings)

    def extract_common_fields(self, data):
        """The address is verified only when the operator says this provider verifies addresses
        (its ``email_verified`` setting): an attribute in the response is the provider's user's to
        set at some providers, and a verified address may link an existing account."""
        fields = super().extract_common_fields(data)
        fields["email_verified"] = self.app.settings.get("email_verified") is True
        return fields

    def groups(self, extra_data: dict) -> list[str]:
        """The values of the app's ``groups_attribute`` (default "groups") in the response."""
        values = (extra_data or {}).get(self.app.settings.get("groups_attribute") or "groups") or []
        return [str(value) for value in (values if isinstance(values, list) else [values])]

    @property
    def team_source(self) -> str:
        return f"saml:{self.app.client_id}"


provider_classes = [SafeSAMLProvider]
