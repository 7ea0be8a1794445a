"""Starting the real web server (scripts/serve.sh, what `make run` serves with) for a test."""

from __future__ import annotations

import contextlib
import http.server
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn

from knowledge.mcp.http import mcp_http_app
from tests.conftest import REPO_ROOT, test_database_url


class LoopbackHandler(http.server.BaseHTTPRequestHandler):
    """A handler for a site a test serves on 127.0.0.1: whole bodies with their length, and no log."""

    def send_body(self, status: int, body: bytes, content_type: str = "text/html") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(
    port: int, process: subprocess.Popen, output: Callable[[], str], seconds: float = 90
) -> None:
    """Until the server accepts connections; a server that exits or never listens fails the test."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode}:\n{output()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"the server did not start within {seconds} s:\n{output()}")


def application_environment(port: int, **environment: str) -> dict[str, str]:
    """The environment `make run`'s processes get in a test: the test database, the production
    settings, ``port``; ``environment`` adds to it (or, with an empty value, removes from it)."""
    env = {
        **os.environ,
        "PORT": str(port),
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        **environment,
    }
    return {name: value for name, value in env.items() if value != ""}


@contextlib.contextmanager
def served_application(log_dir: Path, **environment: str) -> Iterator[int]:
    """scripts/serve.sh on a free port against the test database; yields the port.

    ``environment`` adds to (or, with an empty value, removes from) the server's environment.
    """
    with served_process(log_dir, **environment) as (port, _):
        yield port


@contextlib.contextmanager
def served_process(log_dir: Path, **environment: str) -> Iterator[tuple[int, int]]:
    """Like ``served_application``, yielding the port and the server's process id.

    With ``WEB_WORKERS=1`` that process is the one serving requests (uvicorn runs
    no supervisor then), so its /proc/<pid>/status measures the serving process.
    """
    port = free_port()
    log = log_dir / "server.log"
    env = application_environment(port, **environment)
    with log.open("w") as out:
        process = subprocess.Popen([str(REPO_ROOT / "scripts" / "serve.sh")], env=env, stdout=out, stderr=out)
    try:
        wait_for_port(port, process, lambda: log.read_text()[-3000:])
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def served_mcp() -> Iterator[str]:
    """The MCP app (knowledge.mcp.http) served over HTTP by uvicorn in a thread of this process, so
    that it reads the test's settings (a directory, MFA_REQUIRED); yields its address."""
    port = free_port()
    config = uvicorn.Config(mcp_http_app(), host="127.0.0.1", port=port, lifespan="on", log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="mcp-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp/"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
