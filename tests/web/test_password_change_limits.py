"""A wrong current password on the password-change form counts as a failed log-in (django-axes)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

pytestmark = [pytest.mark.security, pytest.mark.django_db]

CHANGE = "/accounts/password/change/"


def change(client: Client, old_password: str):
    new = "a-New-pass-987"
    return client.post(CHANGE, {"old_password": old_password, "new_password1": new, "new_password2": new})


def test_guessing_the_current_password_locks_like_failed_log_ins(alice):
    session = Client()
    session.force_login(alice)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = change(session, "wrong")
        assert response.status_code == 200 and "incorrect" in response.content.decode()
    assert change(session, "wrong").status_code == 429
    refused = change(session, "pw-alice")  # the right one is refused too while locked
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    alice.refresh_from_db()
    assert alice.check_password("pw-alice")
    # The same count as the log-in page's: the account is locked there as well, from this address.
    assert Client().post("/accounts/login/", {"username": "alice", "password": "pw-alice"}).status_code == 429


def test_the_right_current_password_still_changes_it(alice):
    session = Client()
    session.force_login(alice)
    assert change(session, "wrong").status_code == 200
    response = change(session, "pw-alice")
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("a-New-pass-987")
