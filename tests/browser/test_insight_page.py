"""Usage insight in a real Chromium: a day of questions asked on the chat page, then the operator's
dashboard shows them in its charts and groups the unanswered ones into content gaps."""

from __future__ import annotations

import pytest

from knowledge.models import ChatTurn, Document
from knowledge.services.collections import collection_create
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import DESKTOP, ask, operator_signed_in, signed_in, upload
from tests.conftest import CORPUS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]
chromium = test_pages_ux.chromium  # one Chromium for the module

ANSWERABLE = [
    "Why do cars seem to roll uphill on a gravity hill?",
    "What is a gravity hill?",
]
PARENTAL_LEAVE = [
    "What is the parental leave policy?",
    "How many weeks of maternity leave do employees get?",
    "parental leave: how long can new parents stay home?",
]
ROUTER = ["How do I reset my router password?", "router admin password reset steps"]


def test_a_day_of_questions_shows_in_the_charts_and_the_gaps_group_the_unanswered(
    chromium, live_server, alice, django_user_model, no_llm
):
    hills = collection_create(name="Hills", owner=alice)
    assert upload(hills, CORPUS / "text" / "gravity_hill.md").status == Document.Status.READY
    django_user_model.objects.create_superuser("operator", "op@example.com", "pw-operator")

    page = signed_in(chromium, live_server.url, "alice", DESKTOP)
    for question in ANSWERABLE + PARENTAL_LEAVE + ROUTER:  # each in a new session: no follow-ups
        page.goto(f"{live_server.url}/chat/?collection={hills.pk}")
        ask(page, question)
        page.locator(".turn .turn-actions").wait_for(timeout=60_000)
    page.context.close()
    modes = dict(ChatTurn.objects.values_list("question", "mode"))
    assert [modes[q] for q in PARENTAL_LEAVE + ROUTER] == ["no_results"] * 5, modes
    assert all(modes[q] == "extractive" for q in ANSWERABLE), modes

    page = operator_signed_in(chromium, live_server.url, DESKTOP)
    try:
        page.click("a:has-text('Usage insight')")
        page.wait_for_url(f"{live_server.url}/admin/insight/")
        assert page.locator("svg.insight-plot[role=img]").count() == 5
        assert "7 questions" in page.inner_text("#chart-questions .insight-summary")
        assert "5 unanswered questions" in page.inner_text("#chart-unanswered .insight-summary")
        assert page.locator("#chart-questions rect.series-1").count() == 1  # one day's bar

        groups = page.locator(".insight-gap")
        assert groups.count() == 2
        leave, router = groups.nth(0), groups.nth(1)
        assert leave.locator(".insight-gap-count").inner_text() == "3"
        assert all(question in leave.inner_text() for question in PARENTAL_LEAVE)
        assert "Hills" in leave.inner_text()
        assert router.locator(".insight-gap-count").inner_text() == "2"
        assert all(question in router.inner_text() for question in ROUTER)

        # The filter: one collection, another period; a bad date says so.
        page.select_option("#insight-collection", str(hills.pk))
        page.select_option("#insight-period", "7")
        page.click("input[type=submit][value=Show]")
        page.wait_for_url(f"{live_server.url}/admin/insight/?collection={hills.pk}&period=7&from=&to=")
        assert page.locator(".insight-gap").count() == 2
        with page.expect_download() as download:
            page.click("#chart-questions a:has-text('Download CSV')")
        assert download.value.suggested_filename.endswith(f"-collection-{hills.pk}.csv")
        page.goto(f"{live_server.url}/admin/insight/?from=2026-02-30&to=2026-03-01")
        assert "from: not a date (YYYY-MM-DD): 2026-02-30" in page.inner_text(".errornote")
    finally:
        page.context.close()
