"""The operator's dashboard (the admin's landing page): what needs attention, in a handful of counts."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from knowledge.models import ChatTurn, Document


@dataclass(frozen=True)
class Dashboard:
    documents_processing: int
    documents_failed: int
    questions_today: int
    unanswered_today: int
    unanswered_week: int
    rated_helpful: int
    rated_not_helpful: int
    recent_failures: list[Document]
    today: datetime.date


def operator_dashboard(*, now: datetime.datetime | None = None) -> Dashboard:
    """Counts over every user's data (the admin is the operator's): two aggregate queries and the five
    newest failed documents."""
    now = now or timezone.now()
    today = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    week = now - datetime.timedelta(days=7)
    documents = Document.objects.aggregate(
        processing=Count("pk", filter=Q(status__in=[Document.Status.UPLOADED, Document.Status.PROCESSING])),
        failed=Count("pk", filter=Q(status=Document.Status.FAILED)),
    )
    no_results = Q(mode=ChatTurn.Mode.NO_RESULTS)
    turns = ChatTurn.objects.aggregate(
        today=Count("pk", filter=Q(created_at__gte=today)),
        unanswered_today=Count("pk", filter=no_results & Q(created_at__gte=today)),
        unanswered_week=Count("pk", filter=no_results & Q(created_at__gte=week)),
        helpful=Count("pk", filter=Q(feedback_rating=ChatTurn.Rating.UP)),
        not_helpful=Count("pk", filter=Q(feedback_rating=ChatTurn.Rating.DOWN)),
    )
    failures = list(
        Document.objects.filter(status=Document.Status.FAILED)
        .select_related("collection")
        .order_by("-updated_at")[:5]
    )
    return Dashboard(
        documents_processing=documents["processing"],
        documents_failed=documents["failed"],
        questions_today=turns["today"],
        unanswered_today=turns["unanswered_today"],
        unanswered_week=turns["unanswered_week"],
        rated_helpful=turns["helpful"],
        rated_not_helpful=turns["not_helpful"],
        recent_failures=failures,
        today=today.date(),
    )
