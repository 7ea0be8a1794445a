"""The database goes away under the running web server, then comes back.

With PostgreSQL killed, requests waited the connection pool's 30 s and then answered
a 500, MCP a plain "Internal Server Error", and /healthz took up to 55 s to fail.
Now every surface answers 503 with Retry-After within a few seconds
(DB_CONNECT_TIMEOUT), and answers normally again once the server is back.

The test owns its PostgreSQL (a second server on TCP, as in test_external_database)
and kills it outright (SIGKILL to every process of that server).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.config.test_external_database import _manage, _pg_bin, _postgres_user, tcp_postgres
from tests.served import served_application, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.security]

ANSWERED_WITHIN = 5.0
RECOVERED_WITHIN = 60
TOKEN = """
from django.contrib.auth import get_user_model
from accounts.api_tokens import token_create
user = get_user_model().objects.create_user("outage", password="pw-outage-12345")
print("SECRET " + token_create(user=user, name="outage")[1])
"""
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def _request(port: int, method: str, path: str, headers: dict, body: bytes | None = None):
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, response.getheader("Retry-After"), data, time.monotonic() - started
    finally:
        conn.close()


def _surfaces(secret: str) -> dict[str, tuple]:
    """A page (its session is read from the database), an API endpoint, MCP and /healthz."""
    bearer = {"Authorization": f"Bearer {secret}"}
    mcp_headers = {
        **bearer,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    return {
        "page": ("GET", "/collections/", {"Cookie": "sessionid=" + "x" * 32}, None),
        "api": ("GET", "/api/v1/collections/", bearer, None),
        "mcp": ("POST", "/mcp/", mcp_headers, json.dumps(MCP_INITIALIZE).encode()),
        "healthz": ("GET", "/healthz", {}, None),
    }


def _ask_all(port: int, secret: str) -> dict[str, tuple]:
    return {name: _request(port, *request) for name, request in _surfaces(secret).items()}


def _kill_postgres(data_dir: Path) -> None:
    processes = [
        p for p in psutil.process_iter(["cmdline"]) if str(data_dir) in " ".join(p.info["cmdline"] or [])
    ]
    postmasters = [p for p in processes if p.info["cmdline"][0].endswith("/postgres")]
    assert postmasters, "the test's PostgreSQL is not running"
    for process in postmasters + [c for p in postmasters for c in p.children(recursive=True)]:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(postmasters, timeout=30)


def _start_postgres(base: Path, port: int, log: Path) -> subprocess.Popen:
    """The same server again, on its data directory and port (as tcp_postgres started it)."""
    command = [_pg_bin() / "postgres", "-D", base / "data", "-h", "127.0.0.1", "-p", str(port), "-k", base]
    with log.open("a") as out:
        server = subprocess.Popen(command, stdout=out, stderr=out, **_postgres_user(base))
    wait_for_port(port, server, log.read_text, seconds=60)
    return server


def test_a_killed_database_gets_a_fast_503_with_retry_after_everywhere_and_recovery(tmp_path):
    with tcp_postgres(tmp_path) as (url, server_folder):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings"}
        env["KNOWLEDGE_DATA_DIR"] = str(tmp_path / "data")
        _manage("migrate", "--noinput", env=env)
        _manage("createcachetable", env=env)
        secret = _manage("shell", "-c", TOKEN, env=env).stdout.split("SECRET ", 1)[1].strip()
        served = {
            "DATABASE_URL": url,
            "DEBUG": "false",
            "KNOWLEDGE_SYNC_TASKS": "true",
            "KNOWLEDGE_DATA_DIR": str(tmp_path / "data"),
        }
        restarted = None
        with served_application(tmp_path, **served) as web:
            before = _ask_all(web, secret)
            assert {name: got[0] for name, got in before.items()} == {
                "page": 302,  # the made-up session is no session: to the log-in page
                "api": 200,
                "mcp": 200,
                "healthz": 200,
            }, before

            _kill_postgres(server_folder / "data")
            # Twice: the first requests may find the pool's broken connections, the next ones
            # wait for a new connection (the pool waited 30 s for one).
            for _ in range(2):
                down = _ask_all(web, secret)
                print("database down:", {name: (got[0], round(got[3], 2)) for name, got in down.items()})
                for name, (status, retry_after, body, seconds) in down.items():
                    assert status == 503, (name, status, body[:300])
                    assert seconds <= ANSWERED_WITHIN, (name, seconds)
                    if name != "healthz":
                        assert retry_after and int(retry_after) > 0, (name, retry_after)
                assert json.loads(down["api"][2])["error"]["code"] == "unavailable"
                assert json.loads(down["mcp"][2])["error"]["code"] == "unavailable"
                assert json.loads(down["healthz"][2])["checks"]["database"]["ok"] is False

            restarted = _start_postgres(server_folder, port, tmp_path / "postgres.log")
            try:
                deadline = time.monotonic() + RECOVERED_WITHIN
                while time.monotonic() < deadline:
                    after = _ask_all(web, secret)
                    if all(got[0] < 500 for got in after.values()):
                        break
                    time.sleep(1)
                assert {name: got[0] for name, got in after.items()} == {
                    name: got[0] for name, got in before.items()
                }
            finally:
                restarted.send_signal(signal.SIGINT)  # fast shutdown: the web server is still connected
                restarted.wait(timeout=60)
