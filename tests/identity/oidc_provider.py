"""The test OpenID provider (tests/identity/oidc/idp.mjs, npm's oidc-provider under Node) on a free
loopback port, and a sign-in driven through it the way a browser would: the product's test client
on our side, `requests` on the provider's (its dev login form, then its consent form)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import pytest
import requests

from tests.served import free_port, wait_for_port

OIDC_DIR = Path(__file__).resolve().parent / "oidc"
CLIENT_SECRET = "test-client-secret"  # the provider's only client; not a secret outside the test
# What the product's test client calls itself: the redirect URI the provider must know.
OUR_ORIGIN = "http://testserver"


@dataclass(frozen=True)
class TestProvider:
    provider_id: str
    issuer: str
    users_file: Path

    def set_users(self, users: dict) -> None:
        self.users_file.write_text(json.dumps(users))

    def app(self, **settings) -> dict:
        """This provider as one of allauth's settings-defined apps (what OIDC_PROVIDERS produces)."""
        return {
            "provider_id": self.provider_id,
            "name": f"Test {self.provider_id}",
            "client_id": f"knowledge-{self.provider_id}",
            "secret": CLIENT_SECRET,
            "settings": {
                "server_url": self.issuer,
                "scope": ["openid", "email", "profile", "groups"],
                "token_auth_method": "client_secret_post",
                "oauth_pkce_enabled": True,
                **settings,
            },
        }


@contextlib.contextmanager
def oidc_provider(
    log_dir: Path, provider_id: str, users: dict, tamper: str = "", our_origin: str = OUR_ORIGIN
) -> Iterator[TestProvider]:
    """Starts idp.mjs with ``users`` ({login: claims}) and one client for ``provider_id``; fails
    (never skips) when Node or the locked packages are missing. The users are read from a file at
    every sign-in: ``TestProvider.set_users`` changes them. ``our_origin`` is where the product is
    served (the test client's by default), for the redirect URI the provider accepts."""
    node = shutil.which("node")
    if node is None or not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.fail("node or oidc-provider is missing: scripts/ensure_identity_servers.sh installs them")
    port = free_port()
    users_file = log_dir / f"users-{provider_id}-{port}.json"
    users_file.write_text(json.dumps(users))
    callback = f"{our_origin}/accounts/oidc/{provider_id}/login/callback/"
    client = {
        "client_id": f"knowledge-{provider_id}",
        "client_secret": CLIENT_SECRET,
        "redirect_uris": [callback],
    }
    env = {
        **os.environ,
        "PORT": str(port),
        "OIDC_USERS_FILE": str(users_file),
        "OIDC_CLIENTS": json.dumps([client]),
        "OIDC_TAMPER": tamper,
        "NODE_NO_WARNINGS": "1",
    }
    log = log_dir / f"idp-{provider_id}-{port}.log"
    with log.open("w") as output:
        process = subprocess.Popen([node, "idp.mjs"], cwd=OIDC_DIR, env=env, stdout=output, stderr=output)
    try:
        wait_for_port(port, process, log.read_text, seconds=30)
        yield TestProvider(provider_id=provider_id, issuer=f"http://127.0.0.1:{port}", users_file=users_file)
    finally:
        process.terminate()
        process.wait(timeout=30)


def callback_from_provider(client, provider_id: str, login: str, *, next_url: str = "") -> str:
    """Starts a sign-in with the product's "Sign in with ..." button, signs in at the provider as
    ``login`` and consents; returns the callback URL (path and query) the provider redirects to."""
    start = client.post(f"/accounts/oidc/{provider_id}/login/", {"next": next_url} if next_url else {})
    assert start.status_code == 302, start.content[:500]
    browser = requests.Session()
    page = browser.get(start["Location"], timeout=30)
    assert page.status_code == 200 and 'name="login"' in page.text, page.text[:500]
    page = browser.post(page.url, data={"prompt": "login", "login": login, "password": "any"}, timeout=30)
    answer = browser.post(page.url, data={"prompt": "consent"}, allow_redirects=False, timeout=30)
    while answer.status_code in (302, 303) and not answer.headers["location"].startswith(OUR_ORIGIN):
        answer = browser.get(urljoin(page.url, answer.headers["location"]), allow_redirects=False, timeout=30)
    location = answer.headers.get("location", "")
    assert location.startswith(OUR_ORIGIN), (answer.status_code, answer.text[:500])
    return location[len(OUR_ORIGIN) :]


def with_query(url: str, **replaced: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(replaced)
    return urlunsplit(parts._replace(query=urlencode(query)))


def sign_in(client, provider_id: str, login: str):
    """The whole sign-in; returns the product's answer to the callback."""
    return client.get(callback_from_provider(client, provider_id, login))
