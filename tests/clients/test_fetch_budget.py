"""One budget for a whole piece of work: every request the server sees (redirect hops included) is
taken from it, and its deadline cuts a response short. Real servers on 127.0.0.1; no database."""

from __future__ import annotations

import pytest

from knowledge.source_fetch.budget import BudgetExhausted, FetchBudget
from knowledge.source_fetch.web import FetchPolicy, FetchRefused, WebFetcher
from tests.clients.test_web_fetch import LOOPBACK, site, slow_drip_body  # noqa: F401 (a fixture)

pytestmark = pytest.mark.security


def budgeted(budget: FetchBudget) -> WebFetcher:
    policy = FetchPolicy(allowed_networks=LOOPBACK, requests_per_second_per_host=1000.0)
    return WebFetcher(policy, budget=budget)


def test_every_redirect_hop_is_taken_from_the_budget(site):  # noqa: F811 (the fixture)
    site.routes["/r/"] = lambda h: h.redirect(f"/r/{int(h.path.rsplit('/', 1)[1]) + 1}")
    budget = FetchBudget(max_requests=3, requests_limit="THE_SETTING")
    with pytest.raises(BudgetExhausted) as caught:
        budgeted(budget).get(f"{site.base}/r/0")
    assert len(site.requests) == 3 == budget.used
    assert caught.value.kind == "requests"
    assert caught.value.reason == "the 3 requests allowed were all made (THE_SETTING)"
    assert isinstance(caught.value, FetchRefused)  # callers that know no budget still report it


def test_the_deadline_cuts_a_response_the_fetchers_own_limits_would_let_run(site):  # noqa: F811
    site.routes["/drip"] = slow_drip_body  # a byte every 0.2 s: each read quick, the response endless
    budget = FetchBudget(seconds=1.0, time_limit="THE_DEADLINE")
    with pytest.raises(BudgetExhausted) as caught:
        budgeted(budget).get(f"{site.base}/drip")
    assert (caught.value.kind, caught.value.reason) == ("time", "the 1 s allowed ran out (THE_DEADLINE)")
    assert budget.seconds_left() <= 0
    # Past the deadline nothing more is sent.
    with pytest.raises(BudgetExhausted):
        budgeted(budget).get(f"{site.base}/drip")
    assert len(site.requests) == 1
