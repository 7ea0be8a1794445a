"""The usage insight's figures as CSV files, one per chart, with the page's filter.

Each file has a header row and the figures the chart draws (knowledge.services.insight). Text
that came from users (questions, collection names) is neutralised for spreadsheets: a cell that
starts with = + - @ (or a tab or carriage return) would be run as a formula, so it gets a leading
quote, as OWASP recommends for CSV injection.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable

from config.base.errors import NotFoundError
from knowledge.services.insight import InsightFilter, insight_collections, insight_days
from knowledge.services.insight_gaps import MAX_EXAMPLES, insight_gaps

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """``text`` with a leading quote when a spreadsheet would read it as a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _milliseconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else ""


def _questions_rows(scope: InsightFilter) -> Iterable[list]:
    yield ["day", "questions"]
    for d in insight_days(scope=scope):
        yield [d.day.isoformat(), d.questions]


def _unanswered_rows(scope: InsightFilter) -> Iterable[list]:
    yield ["day", "questions", "unanswered"]
    for d in insight_days(scope=scope):
        yield [d.day.isoformat(), d.questions, d.unanswered]


def _feedback_rows(scope: InsightFilter) -> Iterable[list]:
    yield ["day", "helpful", "not_helpful", "helpful_share"]
    for d in insight_days(scope=scope):
        yield [d.day.isoformat(), d.helpful, d.not_helpful, _share(d.helpful, d.rated)]


def _answer_time_rows(scope: InsightFilter) -> Iterable[list]:
    yield ["day", "timed_answers", "p50_ms", "p95_ms"]
    for d in insight_days(scope=scope):
        yield [d.day.isoformat(), d.timed, _milliseconds(d.p50_ms), _milliseconds(d.p95_ms)]


def _collection_rows(scope: InsightFilter) -> Iterable[list]:
    yield ["collection_id", "collection", "questions", "unanswered"]
    for c in insight_collections(scope=scope):
        yield [c.collection_id, spreadsheet_safe(c.name), c.questions, c.unanswered]


def _gap_rows(scope: InsightFilter) -> Iterable[list]:
    examples = [f"example_{n}" for n in range(1, MAX_EXAMPLES + 1)]
    yield ["group", "questions", "representative", *examples, "collections", "last_asked"]
    for number, group in enumerate(insight_gaps(scope=scope).groups, start=1):
        padded = group.examples + [""] * (MAX_EXAMPLES - len(group.examples))
        yield [
            number,
            group.count,
            spreadsheet_safe(group.representative),
            *(spreadsheet_safe(example) for example in padded),
            spreadsheet_safe("; ".join(group.collections)),
            group.last_asked.isoformat(timespec="seconds"),
        ]


CHARTS: dict[str, Callable[[InsightFilter], Iterable[list]]] = {
    "questions": _questions_rows,
    "unanswered": _unanswered_rows,
    "feedback": _feedback_rows,
    "answer-times": _answer_time_rows,
    "collections": _collection_rows,
    "gaps": _gap_rows,
}


def insight_csv(*, chart: str, scope: InsightFilter) -> tuple[str, str]:
    """(file name, CSV text) of one chart's figures; an unknown chart is "not found"."""
    rows = CHARTS.get(chart)
    if rows is None:
        raise NotFoundError(f"no such chart: {chart[:40]}")
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows(scope))
    return f"insight-{chart}-{scope.file_stem()}.csv", buffer.getvalue()
