"""Failed log-ins lock a (username, address) pair and an address, never a username everywhere.

Many addresses failing against one account slow that account's log-ins from those addresses
down instead: the owner, from an address with no failures for the account, logs in at once.
"""

from __future__ import annotations

import threading

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.db import connection
from django.db.models import F, Sum
from django.test import Client

from accounts.models import RateCounter

pytestmark = [pytest.mark.security, pytest.mark.django_db]

LOGIN = "/accounts/login/"
TOKEN = "/api/v1/auth/token/"


def from_address(n: int) -> Client:
    """A client at its own address (REMOTE_ADDR: no proxy is trusted in the tests)."""
    return Client(REMOTE_ADDR=f"198.51.100.{n}")


def log_in(client: Client, username: str, password: str):
    return client.post(LOGIN, {"username": username, "password": password})


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def fail_from_many_addresses(username: str, count: int) -> None:
    for n in range(1, count + 1):
        assert log_in(from_address(n), username, "wrong").status_code == 200


def cool_off_minutes() -> int:
    return round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)


def failures_counted(username: str) -> int:
    return AccessAttempt.objects.filter(username=username).aggregate(n=Sum("failures_since_start"))["n"] or 0


def pass_the_slowdown_periods() -> None:
    """Move the slowdown's counts two periods back, as time would (they are rows of the database)."""
    RateCounter.objects.filter(key__startswith="login_slowdown_").update(window_index=F("window_index") - 2)


def test_failures_from_many_addresses_do_not_lock_the_owner_out(alice):
    fail_from_many_addresses("alice", settings.AXES_FAILURE_LIMIT + 1)
    owner = from_address(12)  # an address with no failure for alice
    response = log_in(owner, "alice", "pw-alice")
    assert response.status_code == 302 and signed_in(owner)
    token = from_address(13).post(
        TOKEN, {"username": "alice", "password": "pw-alice"}, content_type="application/json"
    )
    assert token.status_code == 201  # every log-in path


def test_failures_from_one_address_lock_that_pair(alice, bob):
    attacker = from_address(1)
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        log_in(attacker, "alice", "wrong")
    refused = log_in(attacker, "alice", "pw-alice")
    assert refused.status_code == 429 and not signed_in(attacker)
    # By default the address limit equals the pair's: one account's failures lock the address too.
    message = f"Too many failed log-ins from your address; try again in {cool_off_minutes()} minutes."
    assert message in refused.content.decode()
    assert int(refused["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()
    owner = from_address(2)
    assert log_in(owner, "alice", "pw-alice").status_code == 302


def test_with_a_higher_address_limit_one_accounts_failures_lock_only_that_pair(alice, bob, settings):
    """Many people behind one address (an office): one person's typos do not lock the others out."""
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 3 * settings.AXES_FAILURE_LIMIT
    office = from_address(1)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in(office, "alice", "wrong")
    refused = log_in(office, "alice", "pw-alice")
    assert refused.status_code == 429
    message = f"Too many failed log-ins for this account from your address; try again in {cool_off_minutes()}"
    assert message in refused.content.decode()
    colleague = from_address(1)
    assert log_in(colleague, "bob", "pw-bob").status_code == 302


def test_one_address_spraying_many_usernames_is_still_limited(bob, make_user):
    sprayer = from_address(1)
    for n in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT):
        make_user(f"user{n}")
        log_in(sprayer, f"user{n}", "Summer2026!")
    refused = log_in(sprayer, "bob", "pw-bob")  # a name never tried from there, the right password
    assert refused.status_code == 429
    assert "Too many failed log-ins from your address" in refused.content.decode()
    assert log_in(from_address(2), "bob", "pw-bob").status_code == 302


def test_addresses_that_failed_against_an_attacked_account_share_one_try_per_interval(alice, settings):
    settings.LOGIN_SLOWDOWN_MAX_SECONDS = 60
    fail_from_many_addresses("alice", settings.LOGIN_SLOWDOWN_AFTER + 6)  # the interval reaches the cap
    typo = from_address(3)  # say the owner mistyped once from here, among the attacker's failures
    assert log_in(typo, "alice", "wrong-again").status_code == 200  # the interval's one try, checked
    counted = failures_counted("alice")
    refused = log_in(typo, "alice", "pw-alice")
    assert refused.status_code == 429 and not signed_in(typo)
    assert "Too many failed log-ins for this account; try again in" in refused.content.decode()
    assert 0 < int(refused["Retry-After"]) <= 2 * 60
    assert failures_counted("alice") == counted  # refused unchecked: not a failure, the wait does not grow
    api = from_address(4).post(
        TOKEN, {"username": "alice", "password": "pw-alice"}, content_type="application/json"
    )
    assert api.status_code == 429 and api.json()["error"]["code"] == "throttled"  # shared by those addresses
    assert int(api["Retry-After"]) > 0
    assert log_in(from_address(40), "alice", "pw-alice").status_code == 302  # a new address: at once
    pass_the_slowdown_periods()
    assert log_in(typo, "alice", "pw-alice").status_code == 302 and signed_in(typo)


def test_the_slowdowns_turn_comes_back_after_its_interval(db, settings):
    """The clock is a parameter: one try per interval, then the wait, then a try again."""
    from accounts.login_limits import Failures, slowdown_claim

    settings.LOGIN_SLOWDOWN_AFTER, settings.LOGIN_SLOWDOWN_MAX_SECONDS = 10, 60
    attacked = Failures(pair=1, address=1, username=16)  # interval 60 s
    start = 1_800_000_000.0
    assert slowdown_claim(username="alice", failures=attacked, now=start) == 0  # this try's turn
    wait = slowdown_claim(username="alice", failures=attacked, now=start + 1)
    assert 0 < wait <= 2 * 60
    assert slowdown_claim(username="alice", failures=attacked, now=start + 1 + wait) == 0
    clean = Failures(pair=0, address=0, username=16)  # an address with no failure for the account
    assert slowdown_claim(username="alice", failures=clean, now=start + 2 + wait) == 0
    assert slowdown_claim(username="alice", failures=clean, now=start + 2 + wait) == 0


def test_the_slowdown_starts_after_its_threshold_and_grows_to_its_cap(settings):
    from accounts.login_limits import slowdown_interval

    settings.LOGIN_SLOWDOWN_AFTER, settings.LOGIN_SLOWDOWN_MAX_SECONDS = 10, 60
    assert [slowdown_interval(failures) for failures in (0, 9, 10, 11, 12, 15, 16, 1000)] == [
        0,
        0,
        1,
        2,
        4,
        32,
        60,
        60,
    ]
    settings.LOGIN_SLOWDOWN_MAX_SECONDS = 0  # off
    assert slowdown_interval(1000) == 0


def test_with_the_slowdown_off_only_the_pair_limit_applies(alice, settings):
    settings.LOGIN_SLOWDOWN_MAX_SECONDS = 0
    fail_from_many_addresses("alice", settings.AXES_FAILURE_LIMIT + 1)
    assert log_in(from_address(3), "alice", "pw-alice").status_code == 302


@pytest.mark.django_db(transaction=True)
def test_parallel_tries_at_the_end_of_a_wait_get_one_turn_between_them(settings):
    """The turn is claimed in one statement: addresses racing for it cannot all be checked."""
    from accounts.login_limits import Failures, slowdown_claim

    settings.LOGIN_SLOWDOWN_AFTER, settings.LOGIN_SLOWDOWN_MAX_SECONDS = 10, 60
    attacked = Failures(pair=1, address=1, username=16)
    barrier, waits = threading.Barrier(8), []

    def claim() -> None:
        try:
            barrier.wait(timeout=30)
            waits.append(slowdown_claim(username="alice", failures=attacked))
        finally:
            connection.close()  # the thread's own connection

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(waits) == 8 and waits.count(0) == 1
