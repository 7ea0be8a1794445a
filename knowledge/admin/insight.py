"""Usage insight for operators (/admin/insight/): questions, unanswered questions, ratings, answer
times, the most asked collections and the content gaps, for a period and a collection; each chart
downloads as CSV with the same filter.

Staff only, like every admin page: ``admin.site.admin_view`` sends anyone else to the admin's
log-in. The figures come from knowledge.services.insight (its docstring defines each); this module
only reads the filter, draws and answers.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.http import urlencode

from config.base.errors import KnowledgeError
from knowledge.admin.insight_charts import Chart, Series, ranking_chart, time_chart
from knowledge.models import Collection
from knowledge.services.insight import (
    PERIODS,
    TOP_COLLECTIONS,
    insight_collections,
    insight_days,
    insight_filter_parse,
    insight_totals,
)
from knowledge.services.insight_csv import insight_csv
from knowledge.services.insight_gaps import insight_gaps

TEMPLATE = "admin/knowledge/insight.html"


# The page quotes every user's questions and names private collections: staff need the right to
# read the asked questions (chat turns) in the admin, not only a staff flag.
INSIGHT_PERMISSION = "knowledge.view_chatturn"


def _readers_of_questions(view):
    @functools.wraps(view)
    def checked(request, *args, **kwargs):
        if not request.user.has_perm(INSIGHT_PERMISSION):
            raise PermissionDenied("reading usage insight needs the permission to view chat turns")
        return view(request, *args, **kwargs)

    return checked


@_readers_of_questions
def insight_page(request):
    """The dashboard; a bad filter shows its message above the (unfiltered) form with status 400."""
    try:
        scope = insight_filter_parse(params=request.GET)
    except KnowledgeError as exc:
        return _page(request, {"error": str(exc), "params": request.GET}, status=exc.status_code)
    days = insight_days(scope=scope)
    collections = insight_collections(scope=scope)
    context = {
        "scope": scope,
        "params": request.GET,
        "totals": insight_totals(days=days),
        "charts": day_charts(days) + [collections_chart(collections)],
        "gaps": insight_gaps(scope=scope),
        "query": urlencode(scope.query()),
    }
    return _page(request, context)


@_readers_of_questions
def insight_csv_download(request, chart: str):
    """One chart's figures as a CSV attachment; a bad filter or chart is a plain-text 4xx."""
    try:
        scope = insight_filter_parse(params=request.GET)
        filename, text = insight_csv(chart=chart, scope=scope)
    except KnowledgeError as exc:
        return HttpResponse(str(exc), status=exc.status_code, content_type="text/plain; charset=utf-8")
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _page(request, context: dict, *, status: int = 200):
    context = {
        **admin.site.each_context(request),
        "title": "Usage insight",
        "periods": PERIODS,
        "collections": Collection.objects.select_related("owner").order_by("name", "pk"),
        **context,
    }
    return TemplateResponse(request, TEMPLATE, context, status=status)


def day_charts(days) -> list[Chart]:
    """The four charts over days, each with a one-sentence summary (its accessible name's second part)."""
    dates = [d.day for d in days]
    span = f"from {dates[0].isoformat()} to {dates[-1].isoformat()}"
    totals = insight_totals(days=days)
    questions = time_chart(
        key="questions",
        title="Questions per day",
        days=dates,
        kind="bars",
        series=[Series("Questions", "series-1", [d.questions for d in days])],
    )
    unanswered = time_chart(
        key="unanswered",
        title="Unanswered questions per day (no results or refused)",
        days=dates,
        kind="bars",
        series=[Series("Unanswered", "series-2", [d.unanswered for d in days])],
    )
    feedback = time_chart(
        key="feedback",
        title="Helpful and not helpful ratings per day",
        days=dates,
        kind="stacked",
        series=[
            Series("Helpful", "series-1", [d.helpful for d in days]),
            Series("Not helpful", "series-2", [d.not_helpful for d in days]),
        ],
    )
    times = time_chart(
        key="answer-times",
        title="Answer time per day (p50 and p95)",
        days=dates,
        kind="lines",
        unit=" ms",
        series=[
            Series("p50", "series-1", [d.p50_ms for d in days]),
            Series("p95", "series-2", [d.p95_ms for d in days]),
        ],
    )
    busiest = max(d.questions for d in days)
    return [
        replace(questions, summary=f"{totals.questions} questions {span}, at most {busiest} a day."),
        replace(unanswered, summary=f"{totals.unanswered} unanswered questions {span}."),
        replace(
            feedback, summary=f"{totals.helpful} helpful and {totals.not_helpful} not helpful ratings {span}."
        ),
        replace(times, summary=_times_summary(days, span)),
    ]


def _times_summary(days, span: str) -> str:
    slowest = max((d.p95_ms for d in days if d.p95_ms is not None), default=None)
    if slowest is None:
        return f"No timed answers {span}."
    return f"Answer times {span}; the highest daily p95 is {slowest:,.0f} ms."


def collections_chart(collections) -> Chart:
    top = collections[:TOP_COLLECTIONS]
    chart = ranking_chart(
        key="collections",
        title=f"Most asked collections (top {TOP_COLLECTIONS})",
        rows=[(c.name, c.questions, c.unanswered) for c in top],
        names=("Questions", "Unanswered"),
    )
    summary = ", ".join(f"{c.name}: {c.questions}" for c in top[:3])
    return replace(chart, summary=f"Questions per collection; most asked: {summary or 'none'}.")


urlpatterns = [
    path("", admin.site.admin_view(insight_page), name="admin_insight"),
    path("<slug:chart>.csv", admin.site.admin_view(insight_csv_download), name="admin_insight_csv"),
]
