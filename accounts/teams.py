"""Team membership from an identity source's groups (OpenID Connect claims, SAML attributes, LDAP).

The operator maps a source's group names to teams (TeamMapping). At each sign-in the user's teams
from that source are brought up to date: the mapped ones added, the ones this source granted
earlier and no longer maps removed. A team the user joined otherwise (the admin, another source) is
never removed by a source, so each grant is remembered (TeamGrant).
"""

from __future__ import annotations

from django.db import transaction

from accounts.audit import audit_record
from accounts.models import TeamGrant, TeamMapping


def teams_mapped(*, source: str, external_groups) -> set[int]:
    """The ids of the teams ``source``'s groups map to (group names compared case-insensitively)."""
    wanted = {str(group).casefold() for group in external_groups or ()}
    mappings = TeamMapping.objects.filter(source=source).values_list("external_group", "team_id")
    return {team_id for group, team_id in mappings if group.casefold() in wanted}


@transaction.atomic
def teams_sync(*, user, source: str, external_groups) -> dict:
    """Adds and removes ``user``'s teams granted by ``source``; returns {"added": [...], "removed": [...]}
    (team names) and records ``sso.teams_synced`` when anything changed."""
    mapped = teams_mapped(source=source, external_groups=external_groups)
    granted = set(TeamGrant.objects.filter(user=user, source=source).values_list("team_id", flat=True))
    member = set(user.groups.values_list("pk", flat=True))
    added = _grant(user, source, mapped - granted, member)
    removed = _revoke(user, source, granted - mapped)
    changes = {"added": sorted(added), "removed": sorted(removed)}
    if added or removed:
        audit_record(
            action="sso.teams_synced", obj=user, changes={"teams": [None, changes], "source": [None, source]}
        )
    return changes


def _grant(user, source: str, team_ids: set[int], member: set[int]) -> list[str]:
    """Grants only the teams the user is not in already: a membership made by hand stays the
    operator's (this source will not remove it later)."""
    new = team_ids - member
    TeamGrant.objects.bulk_create([TeamGrant(user=user, team_id=pk, source=source) for pk in new])
    user.groups.add(*new)
    return list(user.groups.filter(pk__in=new).values_list("name", flat=True))


def _revoke(user, source: str, team_ids: set[int]) -> list[str]:
    """Removes this source's grants; the membership goes only when no other source still grants it."""
    if not team_ids:
        return []
    TeamGrant.objects.filter(user=user, source=source, team_id__in=team_ids).delete()
    still = set(TeamGrant.objects.filter(user=user, team_id__in=team_ids).values_list("team_id", flat=True))
    gone = team_ids - still
    names = list(user.groups.filter(pk__in=gone).values_list("name", flat=True))
    user.groups.remove(*gone)
    return names
