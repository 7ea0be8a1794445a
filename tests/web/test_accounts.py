"""Password change and reset pages (Django's auth views under /accounts/)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-Fresh-passphrase-42"


def test_login_page_links_to_password_reset(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b'href="/accounts/password/reset/"' in response.content
    assert b"Forgot your password?" in response.content


def test_nav_links_to_change_password_when_signed_in(client, alice):
    client.force_login(alice)
    response = client.get("/accounts/tokens/")
    assert response.status_code == 200
    assert b'href="/accounts/password/change/"' in response.content


def test_change_password_requires_login(client):
    response = client.get("/accounts/password/change/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_change_password_then_log_in_with_the_new_one(client, alice):
    client.force_login(alice)
    page = client.get("/accounts/password/change/")
    assert page.status_code == 200 and b"Change password" in page.content

    response = client.post(
        "/accounts/password/change/",
        {"old_password": "pw-alice", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/change/done/"
    done = client.get(response["Location"])
    assert done.status_code == 200 and b"Password changed" in done.content

    client.post("/accounts/logout/")
    # The old password no longer works, the new one does (through the login page).
    bad = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert bad.status_code == 200 and b"did not match" in bad.content
    good = client.post("/accounts/login/", {"username": "alice", "password": NEW_PASSWORD})
    assert good.status_code == 302
    assert client.get("/accounts/tokens/").status_code == 200


def test_change_password_rejects_wrong_old_password(client, alice):
    client.force_login(alice)
    response = client.post(
        "/accounts/password/change/",
        {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 200
    assert b"error" in response.content
    alice.refresh_from_db()
    assert alice.check_password("pw-alice")


def test_password_reset_end_to_end(client, make_user, mailoutbox):
    make_user("erin", email="erin@example.com")
    assert client.get("/accounts/password/reset/").status_code == 200

    response = client.post("/accounts/password/reset/", {"email": "erin@example.com"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/reset/done/"
    assert client.get(response["Location"]).status_code == 200

    assert len(mailoutbox) == 1
    message = mailoutbox[0]
    assert message.to == ["erin@example.com"]
    match = re.search(r"https?://[^/\s]+(/accounts/reset/[^/\s]+/[^/\s]+/)", message.body)
    assert match, message.body
    link = match.group(1)

    # The link redirects to a session-bound "set-password" URL that shows the form.
    response = client.get(link, follow=True)
    assert response.status_code == 200
    assert response.context["validlink"] is True
    form_url = response.redirect_chain[-1][0]
    assert form_url.endswith("/set-password/")

    response = client.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/reset/done/"
    assert client.get(response["Location"]).status_code == 200

    assert _logs_in("erin", NEW_PASSWORD)
    client.logout()
    assert not _logs_in("erin", "pw-erin")

    # The link is single-use.
    again = client.get(link, follow=True)
    assert again.status_code == 200
    assert again.context["validlink"] is False
    assert b"no longer valid" in again.content


def test_password_reset_for_unknown_email_sends_nothing(client, mailoutbox):
    response = client.post("/accounts/password/reset/", {"email": "nobody@example.com"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/reset/done/"
    assert mailoutbox == []


def _logs_in(username: str, password: str) -> bool:
    """Through the log-in page: the test client's login() skips the request the log-in limiter needs."""
    response = Client().post("/accounts/login/", {"username": username, "password": password})
    return response.status_code == 302
