"""Sign-ups and password-reset e-mails are rate-limited per client address, and reset e-mails per account.

The address is the trusted client address (REMOTE_ADDR unless proxies are declared), so a
rotating X-Forwarded-For header resets nothing.
"""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from tests.conftest import throttle_rates

pytestmark = [pytest.mark.security, pytest.mark.django_db]

forged = (f"203.0.113.{n}" for n in itertools.count(1))


@pytest.fixture
def three_per_hour(settings):
    throttle_rates(settings, signup="3/hour", password_reset="3/hour")


def sign_up(username: str, **extra):
    password = "a-Long-pass-123"
    fields = {"username": username, "email": f"{username}@example.com", "password1": password}
    return Client().post("/accounts/signup/", {**fields, "password2": password}, **extra)


def ask_reset(email: str, **extra):
    return Client().post("/accounts/password/reset/", {"email": email}, **extra)


def assert_refused(response) -> None:
    assert response.status_code == 429
    assert "too many" in response.content.decode().lower()
    assert int(response["Retry-After"]) > 0


def test_sign_ups_from_one_address_are_limited(three_per_hour):
    for n in range(3):
        assert sign_up(f"user{n}", HTTP_X_FORWARDED_FOR=next(forged)).status_code == 302
    assert_refused(sign_up("user3", HTTP_X_FORWARDED_FOR=next(forged)))
    assert not get_user_model().objects.filter(username="user3").exists()
    assert sign_up("user4", REMOTE_ADDR="198.51.100.9").status_code == 302  # another client


def test_reset_requests_from_one_address_are_limited(three_per_hour):
    for n in range(3):
        assert ask_reset(f"nobody{n}@example.com", HTTP_X_FORWARDED_FOR=next(forged)).status_code == 302
    assert_refused(ask_reset("nobody3@example.com", HTTP_X_FORWARDED_FOR=next(forged)))


def test_one_account_gets_a_limited_number_of_reset_emails_from_any_address(alice, three_per_hour):
    alice.email = "alice@example.com"
    alice.save()
    for n in range(5):
        response = ask_reset("alice@example.com", REMOTE_ADDR=f"198.51.100.{n + 1}")
        assert response.status_code == 302  # the same answer as for an unknown address
    assert len(mail.outbox) == 3
    assert all(message.to == ["alice@example.com"] for message in mail.outbox)
