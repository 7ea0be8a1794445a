"""The served application (scripts/serve.sh, what `make run` starts) counts log-in failures by the
connection's address: a rotating X-Forwarded-For header sent to the real server resets nothing."""

from __future__ import annotations

import http.client
import json

import pytest

from tests.served import served_application

pytestmark = [pytest.mark.security]

FAILURE_LIMIT = 3


@pytest.fixture
def served_with_login_limit(transactional_db, tmp_path):
    with served_application(
        tmp_path,
        DB_POOL_MAX_SIZE="2",
        LOGIN_FAILURE_LIMIT=str(FAILURE_LIMIT),
        API_THROTTLE_AUTH="1000/minute",  # the log-in limit, not the request throttle, is under test
        TRUSTED_PROXY_COUNT="",  # none: the address is the connection's
    ) as port:
        yield port


def _token_request(port: int, username: str, password: str, forwarded_for: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = json.dumps({"username": username, "password": password})
    headers = {"Content-Type": "application/json", "X-Forwarded-For": forwarded_for}
    connection.request("POST", "/api/v1/auth/token/", body=body, headers=headers)
    status = connection.getresponse().status
    connection.close()
    return status


def test_rotating_forwarded_for_does_not_reset_the_served_log_in_limit(served_with_login_limit, make_user):
    make_user("dave")
    port = served_with_login_limit
    # Every request claims another client address; guesses spread over usernames so that only
    # the per-address count can stop them.
    statuses = [
        _token_request(port, f"guess{n}", "wrong", f"203.0.113.{n}") for n in range(FAILURE_LIMIT + 1)
    ]
    assert statuses[: FAILURE_LIMIT - 1] == [401] * (FAILURE_LIMIT - 1)
    assert statuses[FAILURE_LIMIT - 1 :] == [429, 429]
    assert _token_request(port, "dave", "pw-dave", "198.51.100.99") == 429  # the right password too
    # The served pages carry the strict policy too.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", "/accounts/login/")
    response = connection.getresponse()
    assert response.status == 200 and "script-src 'self'" in response.getheader("Content-Security-Policy")
    connection.close()
