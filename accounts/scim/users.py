"""SCIM Users: the accounts a SCIM source provisioned (ScimAccount), as RFC 7643 User resources,
and the services that create, replace, patch and delete them.

userName is the account's username, name.givenName and name.familyName its first and last name,
the primary (else the first) of emails its e-mail address, active its ``is_active``, externalId
the provider's own id (Entra ID's objectId, Okta's user id). Attributes of the core and enterprise
User schemas the product has no place for (title, phoneNumbers, the manager ...) are accepted and
not stored; a path outside those schemas is refused (400 invalidPath).
"""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from accounts.audit import audit_changes, audit_record
from accounts.models import ScimAccount, TeamGrant
from accounts.scim.errors import ScimError, invalid_value, not_found, schema_check
from accounts.scim.http import location
from accounts.scim.patch import Operation, as_bool
from accounts.scim.teams import scim_source, team_grants_revoke
from accounts.sso.linking import accounts_with_email
from config.base.validation import text_clean

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
FIELDS = ("username", "first_name", "last_name", "email", "is_active", "external_id")
# Accepted and not stored: the rest of the core User schema (RFC 7643 section 4.1) and the
# enterprise extension (4.3), which Entra ID's default attribute mappings send.
_NOT_STORED = {
    "displayname", "nickname", "profileurl", "title", "usertype", "preferredlanguage", "locale",
    "timezone", "password", "phonenumbers", "ims", "photos", "addresses", "groups", "entitlements",
    "roles", "x509certificates", "name.formatted", "name.middlename", "name.honorificprefix",
    "name.honorificsuffix", "meta", "schemas", "id",
}  # fmt: skip
_EMAIL_OF_TYPE = re.compile(r'^emails\[\s*type\s+eq\s+"[^"]*"\s*\]\.value$', re.IGNORECASE)


def scim_users(*, source: str):
    """The accounts ``source`` provisioned and has not deleted."""
    return (
        get_user_model()
        .objects.filter(scim_account__source=source, scim_account__deleted_at__isnull=True)
        .select_related("scim_account")
    )


def scim_user(*, source: str, user_id: str, for_update: bool = False):
    """``source``'s user ``user_id``; ScimError 404 for any other (unknown, local, another source's)."""
    users = scim_users(source=source)
    if for_update:
        users = users.select_for_update(of=("self",))
    found = users.filter(pk=int(user_id)).first() if is_id(user_id) else None
    if found is None:
        raise not_found("user")
    return found


def is_id(text: str) -> bool:
    """Whether ``text`` can be one of our ids (a positive bigint): anything else is simply not found."""
    return text.isascii() and text.isdigit() and len(text) < 19


def user_resource(user) -> dict:
    link = user.scim_account
    resource = {
        "schemas": [USER_SCHEMA],
        "id": str(user.pk),
        "userName": user.username,
        "name": {"givenName": user.first_name, "familyName": user.last_name},
        "displayName": user.get_full_name() or user.username,
        "active": user.is_active,
        "emails": [{"value": user.email, "type": "work", "primary": True}] if user.email else [],
        "meta": {
            "resourceType": "User",
            "created": link.created_at.isoformat(),
            "lastModified": link.updated_at.isoformat(),
            "location": location(f"Users/{user.pk}"),
        },
    }
    if link.external_id:
        resource["externalId"] = link.external_id
    return resource


def _values(user) -> dict:
    link = getattr(user, "scim_account", None)
    values = {name: getattr(user, name) for name in FIELDS if name != "external_id"}
    return {**values, "external_id": link.external_id if link else ""}


def fields_from_resource(body: dict, *, current: dict | None = None) -> dict:
    """The account's fields a POST or PUT body gives (a PUT replaces the names and the address; an
    ``active`` or ``externalId`` left out stays as it was)."""
    schema_check(body, USER_SCHEMA, "a User")
    name = body.get("name") if isinstance(body.get("name"), dict) else {}
    current = current or {"is_active": True, "external_id": ""}
    fields = {
        "username": body.get("userName"),
        "first_name": name.get("givenName", ""),
        "last_name": name.get("familyName", ""),
        "email": _email_of(body.get("emails")),
        "is_active": as_bool(body["active"]) if "active" in body else current["is_active"],
        "external_id": body.get("externalId", current["external_id"]),
    }
    return _checked(fields)


def _email_of(emails) -> str:
    """The primary address, else the first (providers send one or a work and a home address)."""
    if emails in (None, ""):
        return ""
    if not isinstance(emails, list) or not all(isinstance(item, dict) for item in emails):
        raise invalid_value("emails must be a list of objects with a value")
    primary = [item for item in emails if as_bool(item.get("primary", False))]
    chosen = (primary or emails or [{}])[0]
    return chosen.get("value") or ""


def _checked(fields: dict) -> dict:
    username = text_clean(fields["username"], field="userName", max_length=150, required=True)
    try:
        get_user_model().username_validator(username)
    except ValidationError as exc:
        raise invalid_value(f"userName {username!r}: {' '.join(exc.messages)}") from exc
    email = text_clean(fields["email"], field="the e-mail address", max_length=254)
    if email:
        try:
            validate_email(email)
        except ValidationError as exc:
            raise invalid_value(f"{email!r} is not an e-mail address") from exc
    return {
        "username": username,
        "first_name": text_clean(fields["first_name"], field="name.givenName", max_length=150),
        "last_name": text_clean(fields["last_name"], field="name.familyName", max_length=150),
        "email": email,
        "is_active": fields["is_active"],
        "external_id": text_clean(fields["external_id"], field="externalId", max_length=255),
    }


def fields_patched(current: dict, operations: list[Operation]) -> dict:
    fields = dict(current)
    for operation in operations:
        _apply(fields, operation)
    return _checked(fields)


def _apply(fields: dict, operation: Operation) -> None:
    path, value, removing = operation.path.lower(), operation.value, operation.op == "remove"
    if path.startswith(ENTERPRISE_SCHEMA.lower()) or path.split("[")[0] in _NOT_STORED:
        return
    if path == "active":
        if removing:
            raise invalid_value("active cannot be removed")
        fields["is_active"] = as_bool(value)
    elif path in ("username", "externalid"):
        fields["username" if path == "username" else "external_id"] = "" if removing else value
    elif path in ("name.givenname", "name.familyname"):
        fields["first_name" if path == "name.givenname" else "last_name"] = "" if removing else value
    elif path == "name":
        name = {} if removing or not isinstance(value, dict) else value
        fields["first_name"], fields["last_name"] = name.get("givenName", ""), name.get("familyName", "")
    elif path == "emails" or _EMAIL_OF_TYPE.match(path) or path == "emails.value":
        fields["email"] = "" if removing else (value if isinstance(value, str) else _email_of(value))
    else:
        raise ScimError(400, f"unknown attribute path {operation.path!r}", "invalidPath")


def _check_name_free(username: str, *, user=None) -> None:
    taken = get_user_model().objects.filter(username__iexact=username)
    if user is not None:
        taken = taken.exclude(pk=user.pk)
    if taken.exists():
        raise ScimError(409, f"an account named {username!r} exists already", "uniqueness")


def _check_email_free(email: str, *, user=None) -> None:
    """A provider's first sign-in may link to the one account that has its address, so no SCIM
    source may give an address another account has (it would take that sign-in, or make it
    ambiguous and refused)."""
    if not email:
        return
    others = [found for found in accounts_with_email(email) if user is None or found.pk != user.pk]
    if others:
        raise ScimError(409, f"another account has the e-mail address {email!r}", "uniqueness")


def _check_not_operator(user) -> None:
    if user.is_staff or user.is_superuser:
        raise ScimError(403, "this account is an operator's: SCIM does not change it")


@transaction.atomic
def scim_user_create(*, source: str, body: dict):
    """A new account for ``source``; an existing one by that name is refused (409), unless it is
    this source's own deleted user with the same externalId, which comes back."""
    fields = fields_from_resource(body)
    existing = get_user_model().objects.filter(username__iexact=fields["username"]).first()
    if existing is not None:
        return _revived(existing, source=source, fields=fields)
    _check_email_free(fields["email"])
    user = get_user_model()(**{name: fields[name] for name in FIELDS if name != "external_id"})
    user.set_unusable_password()  # signs in through the provider, never with a password
    user.save()
    user.scim_account = ScimAccount.objects.create(
        user=user, source=source, external_id=fields["external_id"]
    )
    audit_record(
        action="scim.user_created",
        obj=user,
        changes={**audit_changes({}, fields), "source": [None, source]},
    )
    return user


def _revived(user, *, source: str, fields: dict):
    link = ScimAccount.objects.select_for_update().filter(user=user).first()
    revivable = link is not None and link.source == source and link.deleted_at is not None
    if not revivable or link.external_id != fields["external_id"]:
        raise ScimError(409, f"an account named {fields['username']!r} exists already", "uniqueness")
    _check_not_operator(user)
    link.deleted_at = None
    link.save(update_fields=["deleted_at", "updated_at"])
    user.scim_account = link
    _write(user, fields, action="scim.user_created", source=source)
    return user


def _write(user, fields: dict, *, action: str, source: str) -> None:
    """Saves ``fields`` on ``user`` and its link, and records ``action`` with what changed (and
    scim.user_deactivated or scim.user_reactivated when ``active`` changed)."""
    before = _values(user)
    _check_name_free(fields["username"], user=user)
    _check_email_free(fields["email"], user=user)
    for name in FIELDS:
        if name != "external_id":
            setattr(user, name, fields[name])
    user.save(update_fields=[name for name in FIELDS if name != "external_id"])
    link = user.scim_account
    link.external_id = fields["external_id"]
    link.save(update_fields=["external_id", "updated_at"])
    changes = audit_changes(before, fields)
    audit_record(action=action, obj=user, changes={**changes, "source": [None, source]})
    if "is_active" in changes:
        flipped = "scim.user_reactivated" if fields["is_active"] else "scim.user_deactivated"
        audit_record(
            action=flipped, obj=user, changes={"is_active": changes["is_active"], "source": [None, source]}
        )


@transaction.atomic
def scim_user_replace(*, source: str, user_id: str, body: dict):
    user = scim_user(source=source, user_id=user_id, for_update=True)
    _check_not_operator(user)
    _write(
        user, fields_from_resource(body, current=_values(user)), action="scim.user_replaced", source=source
    )
    return user


@transaction.atomic
def scim_user_patch(*, source: str, user_id: str, operations: list[Operation]):
    user = scim_user(source=source, user_id=user_id, for_update=True)
    _check_not_operator(user)
    _write(user, fields_patched(_values(user), operations), action="scim.user_patched", source=source)
    return user


@transaction.atomic
def scim_user_delete(*, source: str, user_id: str) -> None:
    """Deactivates the account, takes it out of the teams SCIM gave it and ends the SCIM link; the
    account and what it owns stay for the operator."""
    user = scim_user(source=source, user_id=user_id, for_update=True)
    _check_not_operator(user)
    was_active = user.is_active
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    teams = list(
        TeamGrant.objects.filter(user=user, source=scim_source(source)).values_list("team_id", flat=True)
    )
    removed = team_grants_revoke(user=user, source=source, team_ids=set(teams))
    now = timezone.now()  # update() skips auto_now: meta.lastModified says when it was deleted
    ScimAccount.objects.filter(pk=user.scim_account.pk).update(deleted_at=now, updated_at=now)
    audit_record(
        action="scim.user_deleted",
        obj=user,
        changes={
            "is_active": [was_active, False],
            "teams_removed": [None, removed],
            "source": [None, source],
        },
    )
