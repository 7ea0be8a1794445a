"""SCIM Groups: the teams (auth groups) a SCIM source made (ScimGroup), as RFC 7643 Group
resources, and the services that create, replace, patch and delete them.

A group's members are the users this source granted the team (TeamGrant "scim:<source>"); a
member must be one of this source's users. A displayName that names an existing team (made in
the admin, by another source) is refused (409 uniqueness): such a team is never taken over.
"""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import FilteredRelation, Q

from accounts.audit import AuditSubject, audit_record
from accounts.models import ScimGroup, TeamGrant
from accounts.scim.errors import ScimError, invalid_value, not_found, schema_check
from accounts.scim.http import location
from accounts.scim.patch import Operation, member_in_path
from accounts.scim.teams import scim_source, team_grants_add, team_members_remove
from accounts.scim.users import is_id, scim_users
from config.base.validation import text_clean

GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"


def scim_groups(*, source: str):
    """``source``'s teams; ``scim_members`` (for the members filter) are its own grants only, as the
    resource lists them: a sign-in's or another source's grant of the team is not its to show."""
    own_grants = FilteredRelation("identity_grants", condition=Q(identity_grants__source=scim_source(source)))
    return (
        Group.objects.filter(scim_group__source=source)
        .annotate(scim_members=own_grants)
        .select_related("scim_group")
    )


def scim_group(*, source: str, group_id: str, for_update: bool = False):
    groups = scim_groups(source=source)
    if for_update:
        groups = groups.select_for_update(of=("self",))
    found = groups.filter(pk=int(group_id)).first() if is_id(group_id) else None
    if found is None:
        raise not_found("group")
    return found


def group_resource(team, *, members: bool = True) -> dict:
    link = team.scim_group
    resource = {
        "schemas": [GROUP_SCHEMA],
        "id": str(team.pk),
        "displayName": team.name,
        "meta": {
            "resourceType": "Group",
            "created": link.created_at.isoformat(),
            "lastModified": link.updated_at.isoformat(),
            "location": location(f"Groups/{team.pk}"),
        },
    }
    if link.external_id:
        resource["externalId"] = link.external_id
    if members:
        grants = TeamGrant.objects.filter(team=team, source=scim_source(link.source)).select_related("user")
        resource["members"] = [
            {
                "value": str(grant.user_id),
                "display": grant.user.username,
                "$ref": location(f"Users/{grant.user_id}"),
            }
            for grant in grants.order_by("user_id")
        ]
    return resource


def _display_name(value) -> str:
    return text_clean(value, field="displayName", max_length=150, required=True)


def _check_name_free(name: str, *, team=None) -> None:
    taken = Group.objects.filter(name__iexact=name)
    if team is not None:
        taken = taken.exclude(pk=team.pk)
    if taken.exists():
        raise ScimError(409, f"a team named {name!r} exists already", "uniqueness")


def _members(source: str, value) -> list:
    """The users a members value names (``[{"value": "<id>"}, ...]``) to add or to set: all must be
    ``source``'s, and none an operator's account (which SCIM never changes, its teams neither)."""
    ids = _named_ids(value)
    users = list(scim_users(source=source).filter(pk__in={int(one) for one in ids if is_id(one)}))
    if len(users) != len(ids):
        raise invalid_value("a member is not a user this provider provisioned")
    _check_no_operator(users)
    return users


def _named_ids(value) -> set[str]:
    if value in (None, ""):
        return set()
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise invalid_value('members must be a list of {"value": "<user id>"}')
    return {str(item.get("value", "")) for item in value}


def _check_no_operator(users) -> None:
    if any(user.is_staff or user.is_superuser for user in users):
        raise ScimError(403, "a member is an operator's account: SCIM does not change its teams")


@transaction.atomic
def scim_group_create(*, source: str, body: dict):
    _check_schema(body)
    name = _display_name(body.get("displayName"))
    _check_name_free(name)
    external_id = text_clean(body.get("externalId"), field="externalId", max_length=255)
    members = _members(source, body.get("members"))
    team = Group.objects.create(name=name)
    team.scim_group = ScimGroup.objects.create(team=team, source=source, external_id=external_id)
    added = team_grants_add(team=team, source=source, users=members)
    audit_record(
        action="scim.group_created",
        obj=team,
        changes={"name": [None, name], "members_added": [None, added], "source": [None, source]},
    )
    return team


def _check_schema(body: dict) -> None:
    schema_check(body, GROUP_SCHEMA, "a Group")


@transaction.atomic
def scim_group_replace(*, source: str, group_id: str, body: dict):
    """Name, externalId and the whole member list, as the body gives them."""
    _check_schema(body)
    team = scim_group(source=source, group_id=group_id, for_update=True)
    change = _Change(team, source)
    change.rename(body.get("displayName"))
    if "externalId" in body:
        change.external_id(body.get("externalId"))
    change.set_members(_members(source, body.get("members")))
    change.record("scim.group_replaced")
    return team


@transaction.atomic
def scim_group_patch(*, source: str, group_id: str, operations: list[Operation]):
    team = scim_group(source=source, group_id=group_id, for_update=True)
    change = _Change(team, source)
    for operation in operations:
        _apply(change, operation)
    change.record("scim.group_patched")
    return team


def _apply(change: _Change, operation: Operation) -> None:
    path, op = operation.path.lower(), operation.op
    member = member_in_path(operation.path)
    if path == "displayname" and op != "remove":
        change.rename(operation.value)
    elif path == "externalid":
        change.external_id("" if op == "remove" else operation.value)
    elif member is not None and op == "remove":
        change.remove_members([{"value": member}])
    elif path == "members" and op == "add":
        change.add_members(_members(change.source, operation.value))
    elif path == "members" and op == "remove":
        change.remove_members(operation.value)
    elif path == "members":  # replace
        change.set_members(_members(change.source, operation.value))
    elif path in ("id", "meta", "schemas"):
        return
    else:
        raise ScimError(400, f"unknown attribute path {operation.path!r} for {op}", "invalidPath")


class _Change:
    """What one request changes in a team, recorded as one event."""

    def __init__(self, team, source: str) -> None:
        self.team, self.source = team, source
        self.changes: dict = {}
        self.added: list[str] = []
        self.removed: list[str] = []

    def rename(self, value) -> None:
        name = _display_name(value)
        if name != self.team.name:
            _check_name_free(name, team=self.team)
            self.changes["name"] = [self.team.name, name]
            Group.objects.filter(pk=self.team.pk).update(name=name)
            self.team.name = name

    def external_id(self, value) -> None:
        value = text_clean(value, field="externalId", max_length=255)
        link = self.team.scim_group
        if value != link.external_id:
            self.changes["external_id"] = [link.external_id, value]
            link.external_id = value

    def add_members(self, users) -> None:
        self.added += team_grants_add(team=self.team, source=self.source, users=users)

    def remove_members(self, value) -> None:
        """Removes the members named; with no value, all of them (RFC 7644 3.5.2.2)."""
        if value in (None, "", []):
            ids = set(self._member_ids())
        else:
            # A member this provider deleted since is gone from the team already: removing it again
            # is no error (a provider would retry the whole PATCH for ever).
            ids = set(self._member_ids()) & {int(one) for one in _named_ids(value) if is_id(one)}
        _check_no_operator(scim_users(source=self.source).filter(pk__in=ids))
        self.removed += team_members_remove(team=self.team, source=self.source, user_ids=ids)

    def set_members(self, users) -> None:
        wanted = {user.pk for user in users}
        leaving = set(self._member_ids()) - wanted
        _check_no_operator(scim_users(source=self.source).filter(pk__in=leaving))
        self.removed += team_members_remove(team=self.team, source=self.source, user_ids=leaving)
        self.add_members(users)

    def _member_ids(self):
        return TeamGrant.objects.filter(team=self.team, source=scim_source(self.source)).values_list(
            "user_id", flat=True
        )

    def record(self, action: str) -> None:
        self.team.scim_group.save(update_fields=["external_id", "updated_at"])
        changes = dict(self.changes)
        if self.added:
            changes["members_added"] = [None, self.added]
        if self.removed:
            changes["members_removed"] = [None, self.removed]
        audit_record(action=action, obj=self.team, changes={**changes, "source": [None, self.source]})


@transaction.atomic
def scim_group_delete(*, source: str, group_id: str) -> None:
    """Deletes the team this source made; collections shared with it stay their owners'."""
    team = scim_group(source=source, group_id=group_id, for_update=True)
    members = sorted(team.user_set.values_list("username", flat=True))
    subject = AuditSubject(object_type="auth.group", object_id=team.pk, object_repr=team.name)
    audit_record(
        action="scim.group_deleted",
        obj=subject,
        changes={"name": [team.name, None], "members": [members, None], "source": [None, source]},
    )
    team.delete()
