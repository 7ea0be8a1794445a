"""/healthz and static files, asked of the real server (scripts/serve.sh) with DEBUG off.

/healthz reports the database, the queue and the workers: 503 naming what failed
while no worker runs or the broker is unreachable, 200 once a real worker beats.
"""

from __future__ import annotations

import gzip
import http.client
import json
import time

import pytest

from tests.redis_server import redis_server
from tests.served import free_port, served_application
from tests.workers.test_scale_out import worker_processes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _get(port: int, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def _health(port: int) -> tuple[int, dict]:
    status, headers, body = _get(port, "/healthz")
    assert headers["content-type"] == "application/json"
    assert "no-store" in headers["cache-control"]
    assert "set-cookie" not in headers  # no session for a probe
    return status, json.loads(body)


def _poll_health(port: int, status: int, seconds: float) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        got, body = _health(port)
        if got == status or time.monotonic() > deadline:
            assert got == status, body
            return body
        time.sleep(1)


def test_healthz_reports_a_missing_worker_then_a_beating_one(tmp_path):
    environment = {
        "DEBUG": "false",
        "KNOWLEDGE_PROCESSING_STALE_SECONDS": "10",
        "KNOWLEDGE_SYNC_TASKS": "false",
    }
    with served_application(tmp_path, **environment) as port:
        status, body = _health(port)
        assert status == 503
        assert body["status"] == "failing" and body["failing"] == ["worker"]
        assert body["checks"]["database"]["ok"] and body["checks"]["queue"]["ok"]
        assert body["checks"]["queue"]["broker"] == "orm"
        assert "no worker heartbeat" in body["checks"]["worker"]["error"]

        with worker_processes(1, tmp_path, KNOWLEDGE_MEDIA_ROOT=str(tmp_path / "media")):
            body = _poll_health(port, 200, seconds=120)
        assert body["status"] == "ok" and body["failing"] == []
        assert body["checks"]["worker"]["alive"] >= 1
        assert body["checks"]["queue"]["depth"] <= 1  # at most the worker's probe, on its way
        # The worker stopped: three missed beats later (2 s apart here) the probe fails again.
        body = _poll_health(port, 503, seconds=60)
        assert body["failing"] == ["worker"]


def test_healthz_names_an_unreachable_redis_broker(tmp_path):
    with redis_server(tmp_path) as url:
        with served_application(tmp_path, REDIS_URL=url, KNOWLEDGE_SYNC_TASKS="true") as port:
            status, body = _health(port)
            assert (status, body["failing"]) == (200, []), body
            queue = body["checks"]["queue"]
            assert (queue["ok"], queue["broker"], queue["depth"]) == (True, "redis", 0)
            assert body["checks"]["worker"]["mode"] == "sync"
    # A Redis server that is gone (nothing listens on the port any more).
    gone = f"redis://127.0.0.1:{free_port()}/0"
    with served_application(tmp_path, REDIS_URL=gone, KNOWLEDGE_SYNC_TASKS="true") as port:
        status, body = _health(port)
    assert status == 503 and body["failing"] == ["queue"], body
    assert body["checks"]["queue"]["error"] == "ConnectionError"  # its kind only: no internal address


def test_static_files_are_served_with_debug_off(tmp_path):
    with served_application(tmp_path, DEBUG="false") as port:
        status, headers, body = _get(port, "/static/css/app.css", {"Accept-Encoding": "gzip"})
        assert status == 200, body[:300]
        assert headers["content-type"].startswith("text/css")
        text = gzip.decompress(body) if headers.get("content-encoding") == "gzip" else body
        assert b"{" in text and len(text) > 1000
        assert "max-age" in headers["cache-control"]
        status, _, body = _get(port, "/static/admin/css/base.css")  # an app's static file (the admin)
        assert status == 200 and len(body) > 10_000
        assert _get(port, "/static/css/no-such-file.css")[0] == 404
    log = (tmp_path / "server.log").read_text()
    assert "must consume synchronous iterators" not in log, log[-2000:]
