"""Team memberships a SCIM source grants: a TeamGrant with source "scim:<source>" beside each, so
they live next to the OpenID Connect, SAML and LDAP grants (accounts.teams) without touching them."""

from __future__ import annotations

from accounts.models import TeamGrant


def scim_source(source: str) -> str:
    return f"scim:{source}"


def team_grants_add(*, team, source: str, users) -> list[str]:
    """Grants ``team`` to ``users`` for ``source``; returns the usernames granted now."""
    granted = set(
        TeamGrant.objects.filter(team=team, source=scim_source(source)).values_list("user_id", flat=True)
    )
    new = [user for user in users if user.pk not in granted]
    TeamGrant.objects.bulk_create(
        [TeamGrant(user=user, team=team, source=scim_source(source)) for user in new]
    )
    team.user_set.add(*new)
    return sorted(user.username for user in new)


def team_members_remove(*, team, source: str, user_ids: set[int]) -> list[str]:
    """Removes ``source``'s grants of ``team`` to ``user_ids``; the membership goes when no other
    source still grants it. Returns the usernames whose grant went."""
    grants = TeamGrant.objects.filter(team=team, source=scim_source(source), user_id__in=user_ids)
    gone = set(grants.values_list("user_id", flat=True))
    grants.delete()
    still = set(TeamGrant.objects.filter(team=team, user_id__in=gone).values_list("user_id", flat=True))
    names = sorted(team.user_set.filter(pk__in=gone).values_list("username", flat=True))
    team.user_set.remove(*(gone - still))
    return names


def team_grants_revoke(*, user, source: str, team_ids: set[int]) -> list[str]:
    """Removes ``source``'s grants of ``team_ids`` to ``user`` (a SCIM user deleted); returns the
    team names."""
    TeamGrant.objects.filter(user=user, source=scim_source(source), team_id__in=team_ids).delete()
    still = set(TeamGrant.objects.filter(user=user, team_id__in=team_ids).values_list("team_id", flat=True))
    names = sorted(user.groups.filter(pk__in=team_ids).values_list("name", flat=True))
    user.groups.remove(*(team_ids - still))
    return names
