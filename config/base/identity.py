"""Enterprise identity settings read from the environment: the OpenID Connect providers.

``OIDC_PROVIDERS`` is a JSON list, one object per provider, for example

    [{"id": "keycloak", "name": "Keycloak", "issuer": "https://sso.example.com/realms/staff",
      "client_id": "knowledge", "client_secret_file": "/run/secrets/keycloak",
      "scopes": ["openid", "email", "profile", "groups"], "groups_claim": "groups",
      "jit": true, "email_authentication": false}]

Each becomes one of allauth's settings-defined apps (SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"]),
beside the ones operators add in the admin. A typo stops the process: an identity setting silently
ignored would leave a door open or shut that the operator believes is the other way.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_REQUIRED = {"id", "issuer", "client_id"}
_OPTIONAL = {
    "name",
    "client_secret",
    "client_secret_file",
    "scopes",
    "groups_claim",
    "jit",
    "email_authentication",
    "token_auth_method",
}
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_TOKEN_AUTH_METHODS = ("client_secret_post", "client_secret_basic")


def oidc_apps_from_env() -> list[dict]:
    """allauth app definitions for the providers listed in OIDC_PROVIDERS (none when unset)."""
    name = "OIDC_PROVIDERS"
    # The OpenID Connect providers to sign in with, a JSON list (docs/operator-guide/identity/oidc.md).
    raw = os.environ.get("OIDC_PROVIDERS", "").strip()
    if not raw:
        return []
    try:
        entries = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from exc
    if not isinstance(entries, list):
        raise ImproperlyConfigured(f"{name} must be a JSON list of provider objects")
    apps = [_oidc_app(name, entry) for entry in entries]
    ids = [app["provider_id"] for app in apps]
    if len(set(ids)) != len(ids):
        raise ImproperlyConfigured(f"{name} lists a provider id twice: {ids}")
    return apps


def _oidc_app(name: str, entry) -> dict:
    _check_keys(name, entry)
    provider_id = entry["id"]
    issuer = str(entry["issuer"]).rstrip("/")
    if urlsplit(issuer).scheme not in ("https", "http") or not urlsplit(issuer).netloc:
        raise ImproperlyConfigured(f"{name}: provider {provider_id!r} issuer {issuer!r} is not a URL")
    method = entry.get("token_auth_method", "client_secret_post")
    if method not in _TOKEN_AUTH_METHODS:
        raise ImproperlyConfigured(
            f"{name}: token_auth_method must be one of {', '.join(_TOKEN_AUTH_METHODS)}"
        )
    settings = {
        "server_url": issuer,
        "scope": _scopes(name, entry),
        "token_auth_method": method,
        "groups_claim": str(entry.get("groups_claim", "groups")),
        "email_authentication": _flag(name, entry, "email_authentication", False),
        "oauth_pkce_enabled": True,
    }
    if "jit" in entry:
        settings["jit"] = _flag(name, entry, "jit", True)
    return {
        "provider_id": provider_id,
        "name": str(entry.get("name") or provider_id),
        "client_id": str(entry["client_id"]),
        "secret": _secret(name, entry),
        "settings": settings,
    }


def _check_keys(name: str, entry) -> None:
    if not isinstance(entry, dict):
        raise ImproperlyConfigured(f"{name}: every provider must be a JSON object")
    missing = _REQUIRED - entry.keys()
    unknown = entry.keys() - _REQUIRED - _OPTIONAL
    if missing or unknown:
        raise ImproperlyConfigured(
            f"{name}: provider {entry.get('id')!r} misses {sorted(missing)}, "
            f"has unknown keys {sorted(unknown)}"
        )
    if not isinstance(entry["id"], str) or not _ID.match(entry["id"]):
        raise ImproperlyConfigured(f"{name}: id {entry['id']!r} must be lowercase letters, digits, - or _")


def _scopes(name: str, entry) -> list[str]:
    scopes = entry.get("scopes", ["openid", "email", "profile"])
    if not isinstance(scopes, list) or "openid" not in scopes:
        raise ImproperlyConfigured(f"{name}: provider {entry['id']!r} scopes must be a list including openid")
    return [str(scope) for scope in scopes]


def _flag(name: str, entry, key: str, default: bool) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise ImproperlyConfigured(f"{name}: provider {entry['id']!r} {key} must be true or false")
    return value


def _secret(name: str, entry) -> str:
    """The client secret, inline or from a file (a mounted secret), never both."""
    if "client_secret" in entry and "client_secret_file" in entry:
        raise ImproperlyConfigured(
            f"{name}: provider {entry['id']!r} has client_secret and client_secret_file"
        )
    path = entry.get("client_secret_file")
    if path is None:
        return str(entry.get("client_secret", ""))
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"{name}: client_secret_file {path!r} cannot be read: {exc}") from exc
