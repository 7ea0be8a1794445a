"""PATCH requests (RFC 7644 section 3.5.2) read into plain operations, whichever provider sent them.

Microsoft Entra ID writes ops capitalised ("Replace"), booleans as strings ("False"), and may
send value objects with dotted keys and no path (``{"op": "Replace", "value": {"name.givenName":
"A"}}``); Okta writes ``{"op": "replace", "value": {"active": false}}``. Both come out as a list of
``Operation(op, path, value)``, op in lower case, one path each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from accounts.scim.errors import ScimError, invalid_value, schema_check

PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
MAX_OPERATIONS = 1000  # Entra ID sends group memberships in batches far below this
OPS = ("add", "replace", "remove")
CORE_PREFIX = re.compile(r"^urn:ietf:params:scim:schemas:core:2\.0:(user|group):", re.IGNORECASE)


@dataclass(frozen=True)
class Operation:
    op: str
    path: str  # "" only for a remove without one, which is refused
    value: Any = None


def patch_operations(body: dict) -> list[Operation]:
    """The body's operations; ScimError 400 for a body that is no PatchOp."""
    schema_check(body, PATCH_SCHEMA, "a PATCH body")
    raw = body.get("Operations", body.get("operations"))
    if not isinstance(raw, list) or not raw or len(raw) > MAX_OPERATIONS:
        raise ScimError(
            400, f"Operations must be a list of 1 to {MAX_OPERATIONS} operations", "invalidSyntax"
        )
    found = []
    for item in raw:
        found.extend(_operation(item))
    return found


def _operation(item) -> list[Operation]:
    if not isinstance(item, dict):
        raise ScimError(400, "each operation must be an object", "invalidSyntax")
    op = str(item.get("op", "")).lower()
    if op not in OPS:
        raise ScimError(400, f"unknown op {item.get('op')!r}: add, replace or remove", "invalidSyntax")
    path = item.get("path")
    value = item.get("value")
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise ScimError(400, "a path must be text", "invalidPath")
    if path:
        return [Operation(op, path_clean(path), value)]
    if op == "remove":
        raise ScimError(400, "a remove needs a path", "noTarget")
    if not isinstance(value, dict):
        raise ScimError(400, f"an {op} without a path needs an object as its value", "invalidValue")
    return [Operation(op, path_clean(key), one) for key, one in value.items()]


def path_clean(path: str) -> str:
    """The path without the core schema's URN (Entra may write ``urn:...:core:2.0:User:userName``)."""
    return CORE_PREFIX.sub("", path.strip())


def as_bool(value) -> bool:
    """A SCIM boolean, also written as text ("True", "false") as Entra ID sends it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise invalid_value(f"{value!r} is not a boolean")


_MEMBER_PATH = re.compile(r'^members\[\s*value\s+eq\s+"([^"]*)"\s*\]$', re.IGNORECASE)


def member_in_path(path: str) -> str | None:
    """The member id of a ``members[value eq "id"]`` path (Okta's and Entra's remove), else None."""
    match = _MEMBER_PATH.match(path)
    return match.group(1) if match else None
