"""Usage insight (/admin/insight/): each figure and CSV from real turns, the content-gap grouping on
the real question encoder, the filter's messages and who may see the page."""

from __future__ import annotations

import csv
import datetime
import io

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from knowledge.models import ChatSession, ChatTurn, Profile, ProfileCollection
from knowledge.services.collections import collection_create
from knowledge.services.insight import (
    insight_collections,
    insight_days,
    insight_filter_parse,
    insight_totals,
)
from knowledge.services.insight_csv import insight_csv, spreadsheet_safe
from knowledge.services.insight_gaps import GAP_SIMILARITY, insight_gaps, similar_groups

pytestmark = pytest.mark.django_db

DIRECT = [{"event": "final_answer", "seq": 6, "t_ms": 1.0, "data": {"mode": "no_results", "label": "direct"}}]


def day(days_ago: int) -> datetime.date:
    return timezone.localdate() - datetime.timedelta(days=days_ago)


def asked(user, question, *, days_ago=0, collections=(), profile=None, mode="llm", total_ms=None, **fields):
    """A turn asked ``days_ago`` days ago at noon (local time), in a session of its own."""
    session = ChatSession.objects.create(
        user=user, profile=profile, collection_ids=[] if profile else [c.pk for c in collections]
    )
    durations = {} if total_ms is None else {"retrieval": 5.0, "total": total_ms}
    turn = ChatTurn.objects.create(
        session=session, index=0, question=question, mode=mode, durations_ms=durations, **fields
    )
    noon = datetime.datetime.combine(day(days_ago), datetime.time(12), tzinfo=timezone.get_current_timezone())
    ChatTurn.objects.filter(pk=turn.pk).update(created_at=noon)
    return turn


@pytest.fixture
def usage(alice, bob):
    """Three days of questions on two collections (one through a profile), rated and timed."""
    hills = collection_create(name="Hills", owner=alice)
    tax = collection_create(name="=Tax rules", owner=bob)  # a name a spreadsheet would run
    both = Profile.objects.create(owner=bob, name="Both", tag="both")
    ProfileCollection.objects.create(profile=both, collection=hills)
    ProfileCollection.objects.create(profile=both, collection=tax)
    # Two days ago: three questions on Hills, one unanswered; times 100, 200, 300.
    asked(
        alice, "Why do cars roll uphill?", days_ago=2, collections=[hills], total_ms=100, feedback_rating="up"
    )
    asked(
        alice, "Where is Electric Brae?", days_ago=2, collections=[hills], total_ms=200, feedback_rating="up"
    )
    asked(
        alice,
        "What is the refund policy for pets?",
        days_ago=2,
        collections=[hills],
        mode="no_results",
        total_ms=300,
        feedback_rating="down",
    )
    # Yesterday: nothing. Today: two through the profile (both collections), one on Tax, one
    # "direct" reply (not a question about the documents) and one interrupted turn.
    asked(bob, "What is the VAT rate?", profile=both, total_ms=1000)
    asked(bob, '=HYPERLINK("http://x") tax?', profile=both, mode="no_results", total_ms=50)
    asked(bob, "Deductible expenses?", collections=[tax], total_ms=400, feedback_rating="down")
    asked(bob, "hello", collections=[tax], mode="no_results", total_ms=10, events=DIRECT)
    asked(bob, "interrupted", collections=[tax], mode="")
    asked(alice, "Too old to count", days_ago=40, collections=[hills], total_ms=5)
    return {"hills": hills, "tax": tax}


def scope_of(**params):
    return insight_filter_parse(params={k: str(v) for k, v in params.items()})


def test_each_day_counts_questions_unanswered_ratings_and_answer_time_percentiles(usage):
    days = insight_days(scope=scope_of(period=7))
    assert [d.day for d in days] == [day(n) for n in range(6, -1, -1)]  # every day, the empty ones too
    two_ago, yesterday, today = days[-3], days[-2], days[-1]
    assert (two_ago.questions, two_ago.unanswered, two_ago.helpful, two_ago.not_helpful) == (3, 1, 2, 1)
    assert (two_ago.timed, two_ago.p50_ms, two_ago.p95_ms) == (3, 200, pytest.approx(290))
    assert (yesterday.questions, yesterday.p50_ms) == (0, None)
    # Today: 5 turns; the "direct" reply is not unanswered; the interrupted turn has no time.
    assert (today.questions, today.unanswered, today.not_helpful, today.timed) == (5, 1, 1, 4)
    assert today.p50_ms == pytest.approx(225) and today.p95_ms == pytest.approx(1000 - 0.05 * 3 * 600)
    totals = insight_totals(days=days)
    assert (totals.questions, totals.unanswered, totals.helpful, totals.not_helpful) == (8, 2, 2, 2)
    assert totals.helpful_share == 0.5
    assert sum(d.questions for d in insight_days(scope=scope_of(period=90))) == 9  # the old one too


def test_questions_per_collection_count_the_sessions_collections_and_profiles(usage):
    figures = {f.name: (f.questions, f.unanswered) for f in insight_collections(scope=scope_of(period=7))}
    # Hills: 3 direct + 2 through the profile; Tax: 3 direct + 2 through the profile.
    assert figures == {"Hills": (5, 2), "=Tax rules": (5, 1)}
    hills_only = scope_of(period=7, collection=usage["hills"].pk)
    assert sum(d.questions for d in insight_days(scope=hills_only)) == 5
    assert {f.name: f.questions for f in insight_collections(scope=hills_only)} == {
        "Hills": 5,
        "=Tax rules": 2,
    }
    tax_only = scope_of(period=7, collection=usage["tax"].pk)
    assert sum(d.unanswered for d in insight_days(scope=tax_only)) == 1  # the profile's; "hello" is not


def test_a_custom_period_counts_its_days_only(usage):
    scope = scope_of(**{"from": day(2).isoformat(), "to": day(1).isoformat()})
    assert [(d.day, d.questions) for d in insight_days(scope=scope)] == [(day(2), 3), (day(1), 0)]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"period": "14"}, "period must be 7, 30, 90 days"),
        ({"from": "2026-13-01", "to": "2026-12-01"}, "from: not a date (YYYY-MM-DD): 2026-13-01"),
        ({"from": "2026-01-01"}, "give both dates"),
        ({"from": "2026-02-01", "to": "2026-01-01"}, "from date is after its to date"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "at most 366 days"),
        ({"collection": "abc"}, "no such collection: abc"),
        ({"collection": "999999"}, "no such collection: 999999"),
    ],
)
def test_a_bad_filter_says_what_is_wrong_and_the_page_answers_400(admin_client, params, message):
    response = admin_client.get("/admin/insight/", params)
    assert response.status_code in (400, 404)
    assert message in response.content.decode()
    download = admin_client.get("/admin/insight/questions.csv", params)
    assert download.status_code == response.status_code and message in download.content.decode()


def rows(chart: str, **params) -> list[list[str]]:
    _name, text = insight_csv(chart=chart, scope=scope_of(**params))
    return list(csv.reader(io.StringIO(text)))


def test_each_chart_downloads_its_figures_as_csv(usage):
    questions = rows("questions", period=7)
    assert questions[0] == ["day", "questions"] and questions[-3:] == [
        [day(2).isoformat(), "3"],
        [day(1).isoformat(), "0"],
        [day(0).isoformat(), "5"],
    ]
    assert rows("unanswered", period=7)[-1] == [day(0).isoformat(), "5", "1"]
    assert rows("feedback", period=7)[-3] == [day(2).isoformat(), "2", "1", "0.667"]
    assert rows("feedback", period=7)[-2] == [day(1).isoformat(), "0", "0", ""]
    assert rows("answer-times", period=7)[-3] == [day(2).isoformat(), "3", "200.0", "290.0"]
    collections = rows("collections", period=7)
    assert collections[0] == ["collection_id", "collection", "questions", "unanswered"]
    assert sorted(collections[1:]) == sorted(
        [[str(usage["hills"].pk), "Hills", "5", "2"], [str(usage["tax"].pk), "'=Tax rules", "5", "1"]]
    )


def test_the_csv_download_is_an_attachment_with_the_pages_filter(admin_client, usage):
    response = admin_client.get(
        "/admin/insight/unanswered.csv", {"period": "7", "collection": usage["hills"].pk}
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    expected = (
        f'attachment; filename="insight-unanswered-{day(6)}-to-{day(0)}-collection-{usage["hills"].pk}.csv"'
    )
    assert response["Content-Disposition"] == expected
    assert sum(int(r[2]) for r in list(csv.reader(io.StringIO(response.content.decode())))[1:]) == 2
    assert admin_client.get("/admin/insight/nothing.csv").status_code == 404


def test_spreadsheet_formulas_in_user_text_are_neutralised():
    assert [spreadsheet_safe(t) for t in ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "fine = ok"]] == [
        "'=1+1",
        "'+1",
        "'-1",
        "'@SUM(A1)",
        "'\tx",
        "fine = ok",
    ]


# -- content gaps ------------------------------------------------------------------------------------

PARENTAL_LEAVE = [
    "What is the parental leave policy?",
    "How many weeks of maternity leave do employees get?",
    "parental leave: how long can new parents stay home?",
]
ROUTER = ["How do I reset my router password?", "router admin password reset steps"]
UNRELATED = ["Which recipe uses saffron?", "When was the Eiffel Tower built?"]


def test_paraphrases_of_one_missing_topic_group_together_and_unrelated_ones_do_not(alice):
    hills = collection_create(name="Hills", owner=alice)
    for n, question in enumerate(PARENTAL_LEAVE + ROUTER + UNRELATED):
        asked(alice, question, days_ago=n % 3, collections=[hills], mode="no_results")
    asked(alice, "Why do cars roll uphill?", collections=[hills])  # answered: not a gap
    gaps = insight_gaps(scope=scope_of(period=7))
    groups = {frozenset([g.representative, *g.examples]): g for g in gaps.groups}
    assert set(groups) == {
        frozenset(PARENTAL_LEAVE),
        frozenset(ROUTER),
        *({frozenset([q]) for q in UNRELATED}),
    }
    leave = groups[frozenset(PARENTAL_LEAVE)]
    assert (leave.count, leave.collections) == (3, ["Hills"])
    assert gaps.groups[0] is leave and gaps.groups[1].count == 2  # largest first
    assert (gaps.questions, gaps.unanswered, gaps.capped) == (7, 7, False)

    capped = insight_gaps(scope=scope_of(period=7), limit=3)  # the 3 most recent: asked today
    assert (capped.questions, capped.unanswered, capped.capped) == (3, 7, True)
    gap_rows = rows("gaps", period=7)
    assert gap_rows[0][:3] == ["group", "questions", "representative"] and gap_rows[1][1] == "3"


def test_average_linkage_does_not_chain_unrelated_vectors_through_a_middle_one():
    """A~B and B~C above the threshold but A and C far apart: B joins one of them, not both."""
    import numpy as np

    a = np.array([1.0, 0.0])
    c = np.array([np.cos(1.6), np.sin(1.6)])  # 92 degrees from a
    b = (a + c) / np.linalg.norm(a + c)  # 46 degrees from each: cosine 0.69
    groups = similar_groups(np.stack([a, b, c]), threshold=GAP_SIMILARITY)
    assert sorted(map(len, groups)) == [1, 2]


# -- the page and who may see it ---------------------------------------------------------------------


def test_the_page_shows_the_charts_their_tables_and_the_gaps(admin_client, usage):
    page = admin_client.get("/admin/insight/", {"period": "7"}).content.decode()
    for key in ("questions", "unanswered", "feedback", "answer-times", "collections"):
        assert f'id="chart-{key}"' in page and f"/admin/insight/{key}.csv?period=7" in page
    assert page.count('role="img"') == 5 and page.count("Figures as a table") == 5
    assert "8 questions from" in page and "What is the refund policy for pets?" in page
    assert "hello" not in page.split("Content gaps")[1]
    assert "/admin/insight/" in admin_client.get("/admin/").content.decode()  # linked from the landing page


def test_the_insight_is_for_staff_only(client, alice, django_user_model):
    for path in ("/admin/insight/", "/admin/insight/questions.csv"):
        assert client.get(path).status_code == 302 and "/admin/login/" in client.get(path).url
        client.force_login(alice)
        response = client.get(path)
        assert response.status_code == 302 and "/admin/login/" in response.url
        client.logout()
    staff = django_user_model.objects.create_user("staff", password="pw-staff", is_staff=True)
    client.force_login(staff)
    for path in ("/admin/insight/", "/admin/insight/questions.csv"):
        assert client.get(path).status_code == 403  # staff who may not read the asked questions
    staff.user_permissions.add(Permission.objects.get(codename="view_chatturn"))
    staff = django_user_model.objects.get(pk=staff.pk)  # permissions are cached on the instance
    client.force_login(staff)
    assert client.get("/admin/insight/").status_code == 200
    assert client.get("/admin/insight/questions.csv").status_code == 200


def test_the_bars_are_as_tall_as_their_figures_and_lines_skip_days_without_answers():
    from knowledge.admin.insight_charts import Series, nice_ceiling, time_chart

    assert [nice_ceiling(v) for v in (0, 1, 3, 7, 12, 999)] == [1, 1, 5, 10, 20, 1000]
    days = [day(2), day(1), day(0)]
    bars = time_chart(
        key="q", title="Q", days=days, kind="bars", series=[Series("Q", "series-1", [4, 0, 10])]
    )
    assert [m.height for m in bars.marks][0] / bars.marks[1].height == pytest.approx(0.4, abs=0.01)
    assert len(bars.marks) == 2 and bars.table_rows[1] == [day(1).isoformat(), "0"]
    lines = time_chart(
        key="t",
        title="T",
        days=days,
        kind="lines",
        unit=" ms",
        series=[Series("p50", "series-1", [100, None, 300])],
    )
    assert len(lines.lines[0].points.split()) == 2 and lines.table_rows[1] == [day(1).isoformat(), "–"]
