"""Without DEBUG only the listed host names are served: pages, the API, MCP and static files alike."""

from __future__ import annotations

import http.client
import importlib

import pytest

from tests.served import served_application

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

PATHS = ("/accounts/login/", "/static/js/site.js", "/api/v1/collections/", "/mcp/")


def status_for(port: int, host: str, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path, headers={"Host": host})
        return connection.getresponse().status
    finally:
        connection.close()


def test_without_debug_localhost_names_are_refused_unless_listed(tmp_path):
    with served_application(tmp_path, DEBUG="false", ALLOWED_HOSTS="") as port:
        for host in (f"localhost:{port}", f"[::1]:{port}", "evil.example"):
            assert [status_for(port, host, path) for path in PATHS] == [400] * len(PATHS), host
        served = [status_for(port, f"127.0.0.1:{port}", path) for path in PATHS]
    assert served[:3] == [200, 200, 401] and served[3] != 400


@pytest.fixture
def settings_module(monkeypatch):
    """config.settings, to be read again under changed variables; read once more as it was after."""
    import config.settings as module

    yield module
    monkeypatch.undo()
    importlib.reload(module)


def test_with_debug_the_development_default_takes_localhost(monkeypatch, settings_module):
    module = settings_module
    monkeypatch.delenv("ALLOWED_HOSTS", raising=False)
    monkeypatch.setenv("DEBUG", "true")
    assert importlib.reload(module).ALLOWED_HOSTS == ["localhost", "127.0.0.1", "[::1]"]
    monkeypatch.setenv("DEBUG", "false")
    assert importlib.reload(module).ALLOWED_HOSTS == ["127.0.0.1"]
    monkeypatch.setenv("ALLOWED_HOSTS", "knowledge.example.com")
    assert importlib.reload(module).ALLOWED_HOSTS == ["knowledge.example.com"]
