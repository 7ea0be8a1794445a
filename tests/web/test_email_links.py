"""Links in e-mails point at the site's configured address, never at the Host header a client sent.

ALLOWED_HOSTS ignores ports, so a request for an allowed name on another port is served; had the
reset e-mail been built from that request, its link (and token) would go to whoever listens there.
"""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from accounts.checks import public_url_check
from config.base.env import env_origin, served_origin

pytestmark = [pytest.mark.security, pytest.mark.django_db]

RESET_LINK = re.compile(r"(\S+)/accounts/reset/[^/\s]+/[^/\s]+/")


def ask_reset(**headers):
    return Client().post("/accounts/password/reset/", {"email": "erin@example.com"}, **headers)


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_HOST": "127.0.0.1:18803"},  # an allowed name, another port
        {"HTTP_HOST": "127.0.0.1:18803", "wsgi.url_scheme": "https"},  # and another scheme
    ],
)
def test_the_reset_link_uses_the_configured_address_whatever_the_host_header(
    make_user, mailoutbox, settings, headers
):
    settings.KNOWLEDGE_PUBLIC_URL = "https://kb.example.com"
    make_user("erin", email="erin@example.com")
    assert ask_reset(**headers).status_code == 302
    [message] = mailoutbox
    assert RESET_LINK.search(message.body).group(1) == "https://kb.example.com"
    assert "18803" not in message.body + message.subject
    assert "kb.example.com" in message.subject  # the site's name is its configured address too


def test_the_reset_link_works_at_the_configured_address(make_user, mailoutbox, settings):
    settings.KNOWLEDGE_PUBLIC_URL = "http://127.0.0.1:8000"
    make_user("erin", email="erin@example.com")
    ask_reset(HTTP_HOST="127.0.0.1:18803")
    link = RESET_LINK.search(mailoutbox[0].body)
    assert link.group(1) == "http://127.0.0.1:8000"
    path = link.group(0).removeprefix(link.group(1))
    form = Client().get(path, follow=True)
    assert form.status_code == 200 and 'name="new_password1"' in form.content.decode()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://KB.example.com/", "https://kb.example.com"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_the_configured_address_is_read_as_an_origin(monkeypatch, raw, expected):
    monkeypatch.setenv("KNOWLEDGE_PUBLIC_URL", raw)
    assert env_origin("KNOWLEDGE_PUBLIC_URL", "http://127.0.0.1:8000") == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("kb.example.com", "give http:// or https://"),
        ("ftp://kb.example.com", "give http:// or https://"),
        ("https://", "give a host name"),
        ("https://user:secret@kb.example.com", "without user or password"),
        ("https://kb.example.com/knowledge", "nothing may follow the host"),
        ("https://kb.example.com/?next=/", "nothing may follow the host"),
        ("https://kb.example.com:99999", "out of range"),
    ],
)
def test_a_configured_address_that_is_not_an_origin_stops_the_process(monkeypatch, raw, message):
    monkeypatch.setenv("KNOWLEDGE_PUBLIC_URL", raw)
    with pytest.raises(ImproperlyConfigured, match=f"KNOWLEDGE_PUBLIC_URL=.*{re.escape(message)}"):
        env_origin("KNOWLEDGE_PUBLIC_URL", "http://127.0.0.1:8000")


def test_unset_the_address_is_where_the_start_script_serves():
    assert served_origin("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert served_origin("0.0.0.0", 9000) == "http://127.0.0.1:9000"  # bound everywhere: loopback
    assert served_origin("::1", 8000) == "http://[::1]:8000"
    assert served_origin("kb.internal", 8080) == "http://kb.internal:8080"


@pytest.mark.parametrize(
    ("public_url", "https", "allowed_hosts", "ids"),
    [
        ("https://kb.example.com", True, ["kb.example.com"], []),
        ("http://[::1]:8000", False, ["[::1]"], []),
        ("http://127.0.0.1:8000", True, ["kb.example.com"], ["accounts.W001", "accounts.W002"]),
        ("https://kb.example.com", True, [".example.org"], ["accounts.W002"]),
    ],
)
def test_the_deploy_check_warns_of_an_address_this_site_does_not_serve(
    settings, public_url, https, allowed_hosts, ids
):
    settings.KNOWLEDGE_PUBLIC_URL, settings.HTTPS, settings.ALLOWED_HOSTS = public_url, https, allowed_hosts
    assert [message.id for message in public_url_check()] == ids
