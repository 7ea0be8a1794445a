"""Small query-building helpers shared by the admin, the API and the pages."""

from __future__ import annotations

from django.db.models import Count, IntegerField, QuerySet, Subquery
from django.db.models.functions import Coalesce


def count_subquery(queryset: QuerySet, *, group_by: str) -> Coalesce:
    """COUNT(*) of ``queryset`` (filtered on OuterRef) grouped by ``group_by``, 0 when none.

    A subquery per row rather than joined Counts: two joins would multiply each
    other, and a whole page of rows still costs one query (no N+1).
    """
    counted = queryset.order_by().values(group_by).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)
