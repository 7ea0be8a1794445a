"""Source previews of a site that answers one byte every few seconds, fired by two users within their
write allowances at the real server (scripts/serve.sh: uvicorn, two processes, a small connection pool
each), leave a third user's requests answered as usual.

The preview once fetched inside the request while it held a pooled database connection: 56 such
previews took every connection of both processes, and everyone else's requests waited for one until
they answered 503 ("the database cannot be reached") with PostgreSQL up.
"""

from __future__ import annotations

import http.client
import json
import secrets
import statistics
import string
import threading
import time

import pytest
from django.conf import settings
from django.test import Client

from accounts.api_tokens import token_create
from knowledge.services.collections import collection_create
from tests.served import served_application
from tests.sources.loopback_sites import DripSite, serving

pytestmark = [pytest.mark.security]

PREVIEWS = 56  # 28 per attacker: within the default write allowance (30 a minute)
DRIP_SECONDS = 3.0  # between two bytes of the slow site's answers
PREVIEW_SECONDS = 15  # each preview's deadline: past the third user's requests, which wait for none
THIRD_USER_REQUESTS = 15  # of each kind


@pytest.fixture
def drip_site():
    with serving(lambda: DripSite(DRIP_SECONDS)) as site:
        yield site


@pytest.fixture
def served(transactional_db, tmp_path):
    """The real server on the test database: two processes with a pool of 5 connections each (production
    has 20), every preview let through at once (the per-user limit has a test of its own: here the
    previews must not take the pools even when all of them run)."""
    with served_application(
        tmp_path,
        WEB_WORKERS="2",
        DB_POOL_MAX_SIZE="5",
        DB_POOL_BUSY_TIMEOUT="5",
        API_THROTTLE_WRITES="1000/minute",
        API_THROTTLE_RETRIEVE="100000/minute",
        KNOWLEDGE_SOURCES_ALLOWED_NETWORKS="127.0.0.1/32",
        KNOWLEDGE_SOURCES_PREVIEW_SECONDS=str(PREVIEW_SECONDS),
        KNOWLEDGE_SOURCES_PREVIEWS_PER_USER=str(PREVIEWS),
        KNOWLEDGE_SYNC_TASKS="true",  # /healthz checks no worker (none runs here)
    ) as port:
        yield port


def session_headers(user) -> dict[str, str]:
    """A signed-in browser's headers: its session cookie and the CSRF token the page's script sends."""
    client = Client()
    client.force_login(user)
    csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))  # Django's form
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    return {
        "Cookie": f"{settings.SESSION_COOKIE_NAME}={session}; {settings.CSRF_COOKIE_NAME}={csrf}",
        "X-CSRFToken": csrf,
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def request(port: int, method: str, path: str, headers: dict, body: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class Attack:
    """PREVIEWS previews of the slow site, half by each attacker, each on a thread of its own."""

    def __init__(self, port: int, attackers: list, location: str):
        self.answers: list[tuple[int, bytes]] = []
        self.first_answer_at: float | None = None
        self._lock = threading.Lock()
        body = f"location={location}"
        self.threads = [
            threading.Thread(target=self._preview, args=(port, *attackers[n % len(attackers)], body))
            for n in range(PREVIEWS)
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=PREVIEW_SECONDS + 60)

    def _preview(self, port: int, headers: dict, collection_id: int, body: str) -> None:
        answer = request(port, "POST", f"/collections/{collection_id}/sources/preview/", headers, body)
        with self._lock:
            self.first_answer_at = self.first_answer_at or time.monotonic()
            self.answers.append(answer)


def timed(port: int, path: str, headers: dict) -> tuple[int, float]:
    started = time.monotonic()
    status, _ = request(port, "GET", path, headers)
    return status, time.monotonic() - started


def third_user_requests(port: int, token: str, rounds: int = THIRD_USER_REQUESTS) -> list[tuple[int, float]]:
    api = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    results = []
    for _ in range(rounds):
        results.append(timed(port, "/api/v1/collections/", api))
        results.append(timed(port, "/healthz", {}))
    return results


def settled(port: int, token: str) -> None:
    """Until the freshly started processes answer promptly (each loads a model on a thread as it starts)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(status == 200 and seconds < 0.3 for status, seconds in third_user_requests(port, token, 3)):
            return
    pytest.fail("the server never answered promptly, even before the attack")


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def test_previews_of_a_dripping_site_leave_other_users_answered(served, drip_site, make_user):
    attackers = []
    for name in ("mallory", "trudy"):
        user = make_user(name)
        attackers.append((session_headers(user), collection_create(name=f"{name}'s", owner=user).pk))
    reader = make_user("carol")
    collection_create(name="Carol's notes", owner=reader)
    token = token_create(user=reader, name="reader")[1]
    settled(served, token)

    attack = Attack(served, attackers, f"{drip_site.url}/docs/")
    attack.start()
    all_fetching = drip_site.wait_for_connections(PREVIEWS, seconds=PREVIEW_SECONDS)
    measured = third_user_requests(served, token)
    measured_until = time.monotonic()
    attack.join()

    statuses = [status for status, _ in measured]
    seconds = sorted(seconds for _, seconds in measured)
    reached = f"{drip_site.connections} of {PREVIEWS} previews reached the site"
    assert statuses == [200] * len(measured), f"{statuses}, in {seconds} s; {reached}"
    assert p95(seconds) < 1.0, f"{seconds} s; {reached}"
    # The measure was taken while every preview was waiting on the site, before any had answered.
    assert all_fetching, (
        f"only {drip_site.connections} of {PREVIEWS} previews reached the site: {attack.answers[:2]}"
    )
    assert attack.first_answer_at is not None and measured_until < attack.first_answer_at
    # Each preview ended at its deadline with the reason, none with a server or database error.
    assert len(attack.answers) == PREVIEWS
    for status, body in attack.answers:
        assert status == 400, (status, body[:300])
        assert "answered too slowly" in json.loads(body)["error"]
