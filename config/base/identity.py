"""Enterprise identity settings read from the environment: the OpenID Connect and SAML providers,
and the LDAP directory.

``OIDC_PROVIDERS`` is a JSON list, one object per provider, for example

    [{"id": "keycloak", "name": "Keycloak", "issuer": "https://sso.example.com/realms/staff",
      "client_id": "knowledge", "client_secret_file": "/run/secrets/keycloak",
      "scopes": ["openid", "email", "profile", "groups"], "groups_claim": "groups",
      "jit": true, "email_authentication": false}]

Each becomes one of allauth's settings-defined apps (SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"]),
beside the ones operators add in the admin. A typo stops the process: an identity setting silently
ignored would leave a door open or shut that the operator believes is the other way.

``SAML_PROVIDERS`` is the same for SAML 2.0 identity providers, the provider's metadata from a URL
or a file (docs/operator-guide/identity/saml.md):

    [{"slug": "okta", "name": "Okta", "metadata_url": "https://acme.okta.com/app/exk1/sso/saml/metadata",
      "entity_id": "http://www.okta.com/exk1", "groups_attribute": "groups"}]

The LDAP directory is AUTH_LDAP_SERVER_URI and its companions (docs/operator-guide/identity/ldap.md),
read by ``ldap_settings_from_env``.
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


def _provider_entries(name: str, raw: str) -> list:
    """The JSON list of provider entries ``raw`` read from the variable ``name`` (none when empty).
    Each caller reads its variable by its literal name, so the configuration reference finds it."""
    raw = raw.strip()
    if not raw:
        return []
    try:
        entries = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from exc
    if not isinstance(entries, list):
        raise ImproperlyConfigured(f"{name} must be a JSON list of provider objects")
    return entries


def oidc_apps_from_env() -> list[dict]:
    """allauth app definitions for the providers listed in OIDC_PROVIDERS (none when unset)."""
    name = "OIDC_PROVIDERS"
    # The OpenID Connect providers to sign in with, a JSON list (docs/operator-guide/identity/oidc.md).
    raw = os.environ.get("OIDC_PROVIDERS", "")
    apps = [_oidc_app(name, entry) for entry in _provider_entries(name, raw)]
    ids = [app["provider_id"] for app in apps]
    if len(set(ids)) != len(ids):
        raise ImproperlyConfigured(f"{name} lists a provider id twice: {ids}")
    return apps


def _oidc_app(name: str, entry) -> dict:
    _check_keys(name, entry, key="id", required=_REQUIRED, optional=_OPTIONAL)
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


def _check_keys(name: str, entry, *, key: str, required: set[str], optional: set[str]) -> None:
    """One provider's entry: a JSON object with its required keys, no unknown ones, and its
    ``key`` (an OIDC id, a SAML slug) usable in a URL."""
    if not isinstance(entry, dict):
        raise ImproperlyConfigured(f"{name}: every provider must be a JSON object")
    missing = required - entry.keys()
    unknown = entry.keys() - required - optional
    if missing or unknown:
        raise ImproperlyConfigured(
            f"{name}: provider {entry.get(key)!r} misses {sorted(missing)}, "
            f"has unknown keys {sorted(unknown)}"
        )
    if not isinstance(entry[key], str) or not _ID.match(entry[key]):
        raise ImproperlyConfigured(f"{name}: {key} {entry[key]!r} must be lowercase letters, digits, - or _")


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


# SAML 2.0 identity providers (SAML_PROVIDERS).

_SAML_REQUIRED = {"slug"}
_SAML_OPTIONAL = {
    "name",
    "metadata_url",
    "metadata_file",
    "entity_id",
    "groups_attribute",
    "attribute_mapping",
    "jit",
    "email_verified",
    "email_authentication",
    "sp_entity_id",
}
# What every SAML app is held to, however it was configured (accounts/sso/saml/provider.py forces
# the same on the admin's apps): a signed assertion, python3-saml's strict checks (audience,
# recipient, destination, validity), no sign-in the provider starts on its own (nothing of ours
# asked for it, so it can be replayed or planted), and no SHA-1.
SAML_FORCED_ADVANCED = {
    "want_assertion_signed": True,
    "strict": True,
    "reject_idp_initiated_sso": True,
    "reject_deprecated_algorithm": True,
}


def saml_apps_from_env(taken_ids=()) -> list[dict]:
    """allauth app definitions for the providers listed in SAML_PROVIDERS (none when unset).
    ``taken_ids`` are the OpenID Connect providers' ids: a SAML slug may not reuse one, since a
    provider's users are told apart by (provider id, user id)."""
    name = "SAML_PROVIDERS"
    # The SAML 2.0 providers to sign in with, a JSON list (docs/operator-guide/identity/saml.md).
    raw = os.environ.get("SAML_PROVIDERS", "")
    apps = [_saml_app(name, entry) for entry in _provider_entries(name, raw)]
    ids = [app["provider_id"] for app in apps] + list(taken_ids)
    if len(set(ids)) != len(ids):
        raise ImproperlyConfigured(f"{name} reuses a provider id (OIDC_PROVIDERS' too): {sorted(ids)}")
    return apps


def _saml_app(name: str, entry) -> dict:
    _check_saml_keys(name, entry)
    slug = entry["slug"]
    settings = {
        "idp": _saml_idp(name, entry),
        "groups_attribute": str(entry.get("groups_attribute", "groups")),
        "email_verified": _saml_flag(name, entry, "email_verified", False),
        "email_authentication": _saml_flag(name, entry, "email_authentication", False),
        "advanced": dict(SAML_FORCED_ADVANCED),
    }
    if "jit" in entry:
        settings["jit"] = _saml_flag(name, entry, "jit", True)
    if "attribute_mapping" in entry:
        settings["attribute_mapping"] = _attribute_mapping(name, entry)
    if "sp_entity_id" in entry:
        settings["sp"] = {"entity_id": str(entry["sp_entity_id"])}
    return {
        "provider_id": slug,
        "name": str(entry.get("name") or slug),
        "client_id": slug,
        "settings": settings,
    }


def _check_saml_keys(name: str, entry) -> None:
    _check_keys(name, entry, key="slug", required=_SAML_REQUIRED, optional=_SAML_OPTIONAL)
    if ("metadata_url" in entry) == ("metadata_file" in entry):
        raise ImproperlyConfigured(f"{name}: provider {entry['slug']!r} needs metadata_url or metadata_file")


def _saml_idp(name: str, entry) -> dict:
    """allauth's ``idp`` settings: the metadata URL (read, and re-read every few hours, at sign-in)
    with the entity id to pick in it, or what the metadata file says, read now."""
    slug = entry["slug"]
    if "metadata_url" in entry:
        url = str(entry["metadata_url"])
        if not metadata_url_allowed(url):
            raise ImproperlyConfigured(
                f"{name}: provider {slug!r} metadata_url must be https (http only on this machine)"
            )
        if not entry.get("entity_id"):
            raise ImproperlyConfigured(f"{name}: provider {slug!r} needs entity_id with metadata_url")
        return {"metadata_url": url, "entity_id": str(entry["entity_id"])}
    path = entry["metadata_file"]
    try:
        xml = Path(path).read_text()
    except OSError as exc:
        raise ImproperlyConfigured(f"{name}: metadata_file {path!r} cannot be read: {exc}") from exc
    try:
        return idp_from_metadata(xml, entity_id=entry.get("entity_id"))
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: provider {slug!r} metadata_file {path!r}: {exc}") from exc


def metadata_url_allowed(url: str) -> bool:
    """https, or http to this machine only: the metadata carries the key that signs the assertions,
    so whoever can change it in transit can sign in as anyone."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.netloc:
        return True
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")


def idp_from_metadata(xml: str, *, entity_id: str | None = None) -> dict:
    """allauth's ``idp`` settings (entity_id, sso_url, x509cert) from a provider's metadata XML;
    ValueError when it has no HTTP-Redirect sign-in address or no signing certificate."""
    from onelogin.saml2.idp_metadata_parser import OneLogin_Saml2_IdPMetadataParser

    try:
        parsed = OneLogin_Saml2_IdPMetadataParser.parse(xml, entity_id=entity_id).get("idp", {})
    except Exception as exc:  # lxml and the parser raise several kinds for a broken document
        raise ValueError(f"not SAML metadata: {exc}") from exc
    sso_url = (parsed.get("singleSignOnService") or {}).get("url")
    cert = parsed.get("x509cert") or ((parsed.get("x509certMulti") or {}).get("signing") or [None])[0]
    if not parsed.get("entityId") or not sso_url or not cert:
        raise ValueError("it names no entity id, HTTP-Redirect sign-in address and signing certificate")
    return {"entity_id": parsed["entityId"], "sso_url": sso_url, "x509cert": cert}


def _saml_flag(name: str, entry, key: str, default: bool) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise ImproperlyConfigured(f"{name}: provider {entry['slug']!r} {key} must be true or false")
    return value


_MAPPED_FIELDS = {"uid", "email", "first_name", "last_name", "username"}


def _attribute_mapping(name: str, entry) -> dict:
    """Which of the provider's attributes fill which of our fields; email_verified is not one: only
    the provider's ``email_verified`` setting says its addresses are verified."""
    mapping = entry["attribute_mapping"]
    if not isinstance(mapping, dict) or not mapping.keys() <= _MAPPED_FIELDS:
        raise ImproperlyConfigured(
            f"{name}: provider {entry['slug']!r} attribute_mapping maps only {sorted(_MAPPED_FIELDS)}"
        )
    return {
        key: [str(v) for v in (value if isinstance(value, list) else [value])]
        for key, value in mapping.items()
    }


# The LDAP directory (AUTH_LDAP_SERVER_URI and the rest): django-auth-ldap's settings.

_LDAP_USER_FIELDS = {"first_name": "givenName", "last_name": "sn", "email": "mail"}


def ldap_settings_from_env() -> dict:
    """django-auth-ldap's settings (AUTH_LDAP_*) and LDAP_RECHECK_SECONDS from the environment;
    {"AUTH_LDAP_SERVER_URI": ""} when no directory is configured (the backend is then left out)."""
    from config.base.env import env_bool, env_int, env_str

    # The directory to sign in against, ldaps://host or ldap://host with AUTH_LDAP_START_TLS.
    uri = env_str("AUTH_LDAP_SERVER_URI").strip()
    if not uri:
        return {"AUTH_LDAP_SERVER_URI": ""}
    # Upgrade an ldap:// connection with StartTLS (required for ldap://: passwords cross it).
    start_tls = env_bool("AUTH_LDAP_START_TLS", False)
    _check_ldap_uri(uri, start_tls)
    return {
        "AUTH_LDAP_SERVER_URI": uri,
        "AUTH_LDAP_START_TLS": start_tls,
        # The CA certificate file the directory's TLS certificate must chain to (else the system's).
        "AUTH_LDAP_CONNECTION_OPTIONS": ldap_connection_options(env_str("AUTH_LDAP_CA_FILE")),
        # The service account that searches for users and groups (empty: anonymous search).
        "AUTH_LDAP_BIND_DN": env_str("AUTH_LDAP_BIND_DN"),
        "AUTH_LDAP_BIND_PASSWORD": env_str("AUTH_LDAP_BIND_PASSWORD"),
        # Where users are, and the filter that finds one by the name typed (%(user)s, escaped).
        **_ldap_user_search(
            env_str("AUTH_LDAP_USER_SEARCH_BASE"), env_str("AUTH_LDAP_USER_SEARCH_FILTER", "(uid=%(user)s)")
        ),
        # Where groups are (groupOfNames / AD groups, read by their member attribute); empty: no teams.
        **_ldap_group_search(
            env_str("AUTH_LDAP_GROUP_SEARCH_BASE"),
            env_str("AUTH_LDAP_GROUP_SEARCH_FILTER", "(|(objectClass=groupOfNames)(objectClass=group))"),
        ),
        "AUTH_LDAP_USER_ATTR_MAP": dict(_LDAP_USER_FIELDS),
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_MIRROR_GROUPS": False,  # teams come from TeamMapping (accounts/teams.py), not by name
        "AUTH_LDAP_CACHE_TIMEOUT": 0,  # a user removed from the directory must not linger in a cache
        # Seconds a signed-in directory user is trusted before the directory is asked again whether
        # the user is still there (pages, API tokens, MCP); 0 asks at every request.
        "LDAP_RECHECK_SECONDS": env_int("LDAP_RECHECK_SECONDS", 60, minimum=0),
    }


def _check_ldap_uri(uri: str, start_tls: bool) -> None:
    for one in uri.split():
        scheme = urlsplit(one).scheme
        if scheme not in ("ldap", "ldaps"):
            raise ImproperlyConfigured(f"AUTH_LDAP_SERVER_URI {one!r} must be ldap:// or ldaps://")
        if scheme == "ldap" and not start_tls:
            raise ImproperlyConfigured(
                "AUTH_LDAP_SERVER_URI is ldap:// without AUTH_LDAP_START_TLS: passwords would cross "
                "the network in the clear (use ldaps:// or set AUTH_LDAP_START_TLS=true)"
            )


def ldap_connection_options(ca_file: str) -> dict:
    """python-ldap options: the certificate always checked (against ``ca_file`` when given), a
    network timeout, no referrals (Active Directory's would be followed anonymously)."""
    import ldap

    options = {
        ldap.OPT_X_TLS_REQUIRE_CERT: ldap.OPT_X_TLS_DEMAND,
        ldap.OPT_NETWORK_TIMEOUT: 5,
        ldap.OPT_REFERRALS: 0,
    }
    if ca_file:
        if not Path(ca_file).is_file():
            raise ImproperlyConfigured(f"AUTH_LDAP_CA_FILE {ca_file!r} is not a file")
        options[ldap.OPT_X_TLS_CACERTFILE] = ca_file
    options[ldap.OPT_X_TLS_NEWCTX] = 0  # last: makes the TLS options above take effect
    return options


def _ldap_user_search(base: str, filterstr: str) -> dict:
    import ldap
    from django_auth_ldap.config import LDAPSearch

    if not base:
        raise ImproperlyConfigured("AUTH_LDAP_USER_SEARCH_BASE is required with AUTH_LDAP_SERVER_URI")
    if "%(user)s" not in filterstr:
        raise ImproperlyConfigured("AUTH_LDAP_USER_SEARCH_FILTER must contain %(user)s")
    return {"AUTH_LDAP_USER_SEARCH": LDAPSearch(base, ldap.SCOPE_SUBTREE, filterstr)}


def _ldap_group_search(base: str, filterstr: str) -> dict:
    import ldap
    from django_auth_ldap.config import GroupOfNamesType, LDAPSearch

    if not base:
        return {}
    return {
        "AUTH_LDAP_GROUP_SEARCH": LDAPSearch(base, ldap.SCOPE_SUBTREE, filterstr),
        "AUTH_LDAP_GROUP_TYPE": GroupOfNamesType(),
    }
