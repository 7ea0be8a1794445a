"""Team shares: a collection's manager shares it with a Django group, for reading or for writing.

Teams are ``auth.Group``: operators create groups and manage memberships in the admin, and
``user.groups`` is the membership. Who reads and writes through a share is decided in
knowledge.access (membership is joined in its SQL at query time); these services only write
the shares that rule reads. Like every grant (knowledge.services.sharing), a change locks the
collection's row first, so it never interleaves with another access decision on it.

A manager picks among the groups they belong to (staff: any group), so nobody learns or uses
a team they are not in. Stopping a share works for any group it names.
"""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import QuerySet

from accounts.audit import audit_record
from config.base.errors import NotFoundError
from knowledge.models import Collection, CollectionShare
from knowledge.services.sharing import collection_access_lock


def shareable_groups(*, user) -> QuerySet[Group]:
    """The groups ``user`` may share a collection with: their own; staff, every group."""
    if user.is_staff:
        return Group.objects.order_by("name")
    return Group.objects.filter(user=user).order_by("name")


def shareable_group_get(*, user, group: int | str) -> Group:
    """``group`` (an id, or an exact name) among ``user``'s shareable groups; anything else NotFound."""
    lookup = {"pk": group} if isinstance(group, int) else {"name": group}
    found = shareable_groups(user=user).filter(**lookup).first()
    if found is None:
        mine = "" if user.is_staff else " you belong to"
        raise NotFoundError(f"no such group{mine}: {group} (share only with a team you are in)")
    return found


def collection_shares(*, collection: Collection) -> QuerySet[CollectionShare]:
    """The collection's team shares, by group name."""
    return CollectionShare.objects.filter(collection=collection).select_related("group", "created_by")


@transaction.atomic
def collection_share_set(
    *, collection: Collection, user, group: int | str, can_write: bool
) -> tuple[CollectionShare, bool]:
    """Share ``collection`` with one of ``user``'s groups (or change how); returns (share, created)."""
    team = shareable_group_get(user=user, group=group)
    collection_access_lock(collection_id=collection.pk)
    before = CollectionShare.objects.filter(collection=collection, group=team).first()
    share, created = CollectionShare.objects.update_or_create(
        collection=collection,
        group=team,
        defaults={"can_write": can_write},
        create_defaults={"can_write": can_write, "created_by": user},
    )
    collection_share_record(
        collection=collection,
        group=team,
        before=None if before is None else before.can_write,
        after=can_write,
    )
    return share, created


def collection_share_record(*, collection: Collection, group: Group, before: bool | None, after: bool | None):
    """Audit a team share given, changed (read/write) or stopped; ``None`` is "not shared"."""
    if before == after:
        return
    access = {None: None, False: "read", True: "write"}
    action = "collection.team_unshared" if after is None else "collection.team_shared"
    audit_record(
        action=action, obj=collection, changes={f"team {group.name}": [access[before], access[after]]}
    )


@transaction.atomic
def collection_share_remove(*, collection: Collection, group_id: int) -> None:
    """Stop sharing with the group: its members lose access at their next request."""
    collection_access_lock(collection_id=collection.pk)
    share = (
        CollectionShare.objects.filter(collection=collection, group_id=group_id)
        .select_related("group")
        .first()
    )
    if share is None:
        raise NotFoundError(f"this collection is not shared with group {group_id}")
    access = "write" if share.can_write else "read"
    audit_record(
        action="collection.team_unshared",
        obj=collection,
        changes={f"team {share.group.name}": [access, None]},
    )
    share.delete()
