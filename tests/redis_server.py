"""A real redis-server (Debian's) on a free loopback port, for the tests of the Redis broker."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.served import free_port, wait_for_port


@contextlib.contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """Start redis-server with no persistence; yields its URL. Fails when the binary is absent:
    the test command installs it (scripts/ensure_redis.sh), so a skip would only hide a broken set-up.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (scripts/ensure_redis.sh installs it)")
    port = free_port()
    log = directory / "redis.log"
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    command += ["--dir", str(directory), "--logfile", str(log)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, process, lambda: log.read_text() if log.exists() else "", seconds=30)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=30)
