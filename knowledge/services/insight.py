"""Usage insight for operators: what was asked, what went unanswered, how answers were rated and timed.

Every question (chat page, /api/v1/query/, the MCP answer tools) is one ChatTurn, so every figure
here is a count over turns, for one period (local calendar days, both ends included) and
optionally one collection. The operator sees every user's turns (the admin is theirs).

Definitions, the same on the page and in the CSV files:

- a question is a turn, whatever became of it (an interrupted one included);
- unanswered: the turn's mode is ``no_results``, which is both "nothing relevant was found" and
  "passages were found but the answerability verdict refused them" (knowledge.chat.stream stores
  either as no_results); a "direct" reply (the agentic classifier judged the message not to be a
  question about the documents, e.g. "hello") is not counted as unanswered;
- answer time: ``durations_ms["total"]``, from the question to the saved answer;
- the collections a question was about: those its session searched, that is the session's
  ``collection_ids`` or, for a session with a profile, the profile's collections (as they are
  now). This says what the user asked about; the cited sources would only say what answered,
  and an unanswered question cites nothing.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from django.db.models import Aggregate, Count, Exists, FloatField, OuterRef, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, TruncDate
from django.utils import timezone

from config.base.errors import KnowledgeError, NotFoundError
from config.base.validation import id_or_none
from knowledge.models import ChatTurn, Collection, ProfileCollection

PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 30
# A custom period is at most a year and a day: one bar per day stays readable and the query cheap.
MAX_DAYS = 366
TOP_COLLECTIONS = 10


@dataclass(frozen=True)
class InsightFilter:
    """The period (local dates, both included) and the collection (None: all) every figure covers."""

    start: datetime.date
    end: datetime.date
    collection: Collection | None = None
    period: int | None = DEFAULT_PERIOD  # None: a custom from/to period

    @property
    def days(self) -> list[datetime.date]:
        count = (self.end - self.start).days + 1
        return [self.start + datetime.timedelta(days=n) for n in range(count)]

    def query(self) -> dict[str, str]:
        """The GET parameters that give this filter back (the CSV links carry them)."""
        query = {"collection": str(self.collection.pk)} if self.collection else {}
        if self.period is None:
            return query | {"from": self.start.isoformat(), "to": self.end.isoformat()}
        return query | {"period": str(self.period)}

    def file_stem(self) -> str:
        collection = f"-collection-{self.collection.pk}" if self.collection else ""
        return f"{self.start.isoformat()}-to-{self.end.isoformat()}{collection}"


def insight_filter_parse(*, params: Mapping[str, str], today: datetime.date | None = None) -> InsightFilter:
    """The filter from GET parameters ``period`` (7, 30, 90), or ``from`` and ``to`` (YYYY-MM-DD),
    and ``collection`` (an id); a bad value raises KnowledgeError saying which and why."""
    today = today or timezone.localdate()
    collection = _collection_param(params.get("collection", ""))
    if params.get("from") or params.get("to"):
        start, end = _dates_param(params.get("from", ""), params.get("to", ""), today=today)
        return InsightFilter(start=start, end=end, collection=collection, period=None)
    period = _period_param(params.get("period", ""))
    start = today - datetime.timedelta(days=period - 1)
    return InsightFilter(start=start, end=today, collection=collection, period=period)


def _collection_param(raw: str) -> Collection | None:
    raw = raw.strip()
    if not raw:
        return None
    collection_id = id_or_none(raw)
    collection = Collection.objects.filter(pk=collection_id).first() if collection_id else None
    if collection is None:
        raise NotFoundError(f"no such collection: {raw[:40]}")
    return collection


def _period_param(raw: str) -> int:
    raw = raw.strip()
    if not raw:
        return DEFAULT_PERIOD
    if raw not in {str(days) for days in PERIODS}:
        choices = ", ".join(str(days) for days in PERIODS)
        raise KnowledgeError(f"period must be {choices} days, or give from and to dates")
    return int(raw)


def _dates_param(
    raw_start: str, raw_end: str, *, today: datetime.date
) -> tuple[datetime.date, datetime.date]:
    if not raw_start.strip() or not raw_end.strip():
        raise KnowledgeError("give both dates of the period: from and to")
    start, end = _date(raw_start, "from"), _date(raw_end, "to")
    if start > end:
        raise KnowledgeError("the period's from date is after its to date")
    if (end - start).days + 1 > MAX_DAYS:
        raise KnowledgeError(f"a period covers at most {MAX_DAYS} days")
    if start > today:
        raise KnowledgeError("the period starts in the future")
    return start, end


def _date(raw: str, name: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(raw.strip())
    except ValueError:
        raise KnowledgeError(f"{name}: not a date (YYYY-MM-DD): {raw.strip()[:40]}") from None


# -- the turns a filter covers ---------------------------------------------------------------------

DIRECT_REPLY = Q(events__contains=[{"event": "final_answer", "data": {"label": "direct"}}])
UNANSWERED = Q(mode=ChatTurn.Mode.NO_RESULTS) & ~DIRECT_REPLY


def insight_turns(*, scope: InsightFilter) -> QuerySet[ChatTurn]:
    """Every turn asked within the period, about the collection when one is chosen."""
    zone = timezone.get_current_timezone()
    start = datetime.datetime.combine(scope.start, datetime.time.min, tzinfo=zone)
    end = datetime.datetime.combine(scope.end + datetime.timedelta(days=1), datetime.time.min, tzinfo=zone)
    turns = ChatTurn.objects.filter(created_at__gte=start, created_at__lt=end)
    if scope.collection is not None:
        turns = turns.filter(_asked_about(scope.collection.pk))
    return turns


def _asked_about(collection_id: int) -> Q:
    """Turns whose session searched the collection: by its own list, or through its profile."""
    in_profile = ProfileCollection.objects.filter(
        profile=OuterRef("session__profile"), collection_id=collection_id
    )
    return Q(session__profile__isnull=True, session__collection_ids__contains=[collection_id]) | Q(
        Exists(in_profile)
    )


# -- figures per day ---------------------------------------------------------------------------------


class Percentile(Aggregate):
    """PostgreSQL's continuous percentile, NULLs ignored: ``percentile_cont(f) WITHIN GROUP (ORDER BY x)``."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, *, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


@dataclass(frozen=True)
class DayFigures:
    day: datetime.date
    questions: int = 0
    unanswered: int = 0
    helpful: int = 0
    not_helpful: int = 0
    timed: int = 0  # questions with a recorded answer time
    p50_ms: float | None = None
    p95_ms: float | None = None

    @property
    def rated(self) -> int:
        return self.helpful + self.not_helpful


def insight_days(*, scope: InsightFilter) -> list[DayFigures]:
    """One row per day of the period, days without questions included (as zeros): one query."""
    total_ms = Cast(KeyTextTransform("total", "durations_ms"), FloatField())
    rows = (
        insight_turns(scope=scope)
        .annotate(day=TruncDate("created_at", tzinfo=timezone.get_current_timezone()))
        .values("day")
        .annotate(
            questions=Count("pk"),
            unanswered=Count("pk", filter=UNANSWERED),
            helpful=Count("pk", filter=Q(feedback_rating=ChatTurn.Rating.UP)),
            not_helpful=Count("pk", filter=Q(feedback_rating=ChatTurn.Rating.DOWN)),
            timed=Count(total_ms),
            p50_ms=Percentile(total_ms, fraction=0.5),
            p95_ms=Percentile(total_ms, fraction=0.95),
        )
    )
    by_day = {row.pop("day"): row for row in rows}
    return [DayFigures(day=day, **by_day.get(day, {})) for day in scope.days]


@dataclass(frozen=True)
class PeriodTotals:
    questions: int
    unanswered: int
    helpful: int
    not_helpful: int

    @property
    def helpful_share(self) -> float | None:
        """Helpful answers among the rated ones (0 to 1), None when nothing was rated."""
        rated = self.helpful + self.not_helpful
        return self.helpful / rated if rated else None


def insight_totals(*, days: list[DayFigures]) -> PeriodTotals:
    return PeriodTotals(
        questions=sum(d.questions for d in days),
        unanswered=sum(d.unanswered for d in days),
        helpful=sum(d.helpful for d in days),
        not_helpful=sum(d.not_helpful for d in days),
    )


# -- collections -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectionFigures:
    collection_id: int
    name: str
    questions: int
    unanswered: int


def insight_collections(*, scope: InsightFilter) -> list[CollectionFigures]:
    """Questions per collection searched, most asked first (a question about two collections counts
    for both). Grouped by session scope in SQL, so the rows are few; the profiles' collections are
    read in one more query."""
    rows = list(
        insight_turns(scope=scope)
        .values("session__profile_id", "session__collection_ids")
        .annotate(questions=Count("pk"), unanswered=Count("pk", filter=UNANSWERED))
    )
    searched = searched_collection_ids(
        profile_ids={row["session__profile_id"] for row in rows if row["session__profile_id"]}
    )
    questions, unanswered = Counter(), Counter()
    for row in rows:
        for collection_id in searched(row["session__profile_id"], row["session__collection_ids"]):
            questions[collection_id] += row["questions"]
            unanswered[collection_id] += row["unanswered"]
    names = collection_names(ids=set(questions))
    figures = [
        CollectionFigures(
            collection_id=cid, name=names[cid], questions=questions[cid], unanswered=unanswered[cid]
        )
        for cid in questions
    ]
    return sorted(figures, key=lambda f: (-f.questions, f.name.lower(), f.collection_id))


def searched_collection_ids(*, profile_ids: set[int]):
    """A function (profile id, session collection ids) -> the collection ids a session searched."""
    by_profile: dict[int, list[int]] = {}
    links = ProfileCollection.objects.filter(profile_id__in=profile_ids).order_by("collection_id")
    for profile_id, collection_id in links.values_list("profile_id", "collection_id"):
        by_profile.setdefault(profile_id, []).append(collection_id)

    def searched(profile_id: int | None, collection_ids: list[int] | None) -> list[int]:
        if profile_id:
            return by_profile.get(profile_id, [])
        return sorted(set(collection_ids or []))

    return searched


def collection_names(*, ids: set[int]) -> dict[int, str]:
    """Each id's collection name; a collection deleted since the question was asked is named so."""
    names = dict(Collection.objects.filter(pk__in=ids).values_list("pk", "name"))
    return {cid: names.get(cid, f"(deleted collection {cid})") for cid in ids}
