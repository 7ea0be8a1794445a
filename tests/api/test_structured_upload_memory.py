"""JSON and YAML uploads are checked in bounded memory by the real web server.

Type detection runs in the web process: loading a 4 MB YAML list of one-letter
scalars there took 28 s and 1.8 GB, a 16 MB JSON list of ``{}`` 787 MB. The
server here is the one `make run` starts (scripts/serve.sh, one process), and
its growth is read from its own /proc/<pid>/status: its peak (VmHWM) after the
upload against its peak after an upload of the same size that is refused
before it is parsed. So what is measured is what checking the file adds to
any upload of that size (receiving a 4 MB upload itself raises the peak by
tens of MB: the body is buffered by the server, by Django and by the
multipart parser, on two threads).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import requests
import yaml

from accounts.api_tokens import token_create
from knowledge.models import Document
from knowledge.services.collections import collection_create
from tests.ingestion import hostile_files as hostile
from tests.served import served_process

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.security]

MIB = 1 << 20
GROWTH_BOUND_MB = 100
# Refused in about 2 s on the development machine; loading them took 28 s (YAML).
REFUSAL_SECONDS = 15


@pytest.fixture
def server(transactional_db, tmp_path):
    # Uploads are only queued (no worker runs): the server's memory is the upload's alone.
    with served_process(tmp_path, WEB_WORKERS="1", KNOWLEDGE_SYNC_TASKS="false") as (port, pid):
        yield f"http://127.0.0.1:{port}", pid


@pytest.fixture
def uploader(alice):
    collection = collection_create(name="specs", owner=alice)
    _, secret = token_create(user=alice, name="uploads")

    headers = {"Authorization": f"Bearer {secret}"}

    def upload(base: str, filename: str, data: bytes) -> requests.Response:
        url = f"{base}/api/v1/collections/{collection.pk}/documents/"
        return requests.post(url, headers=headers, files={"file": (filename, data)}, timeout=120)

    def ask(base: str) -> requests.Response:
        body = {"question": "What is in it?", "collections": [collection.pk]}
        return requests.post(f"{base}/api/v1/retrieve/", headers=headers, json=body, timeout=300)

    upload.collection = collection
    upload.ask = ask
    return upload


def _status_mb(pid: int, field: str) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split(f"{field}:")[1].split()[0]) / 1024


def _warm_up(base: str, upload, pid: int, size: int) -> None:
    """The server at rest with its model loaded, then an upload of ``size`` bytes refused before it is
    parsed (binary): the peak of receiving it.

    The server loads its embedding model in a thread as it starts (config/asgi.py), which takes tens
    of MB; a question waits for that load, so it cannot overlap the measurement.
    """
    assert upload.ask(base).status_code == 200
    _wait_for_steady_memory(pid)
    response = upload(base, "warm.bin", b"\x01" * size)
    assert response.status_code == 415, response.text


def _wait_for_steady_memory(pid: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    previous = _status_mb(pid, "VmRSS")
    while time.monotonic() < deadline:
        time.sleep(1)
        current = _status_mb(pid, "VmRSS")
        if abs(current - previous) < 1:
            return
        previous = current
    pytest.fail(f"the server's memory did not settle within {seconds} s")


@pytest.mark.parametrize(
    ("filename", "make"),
    [
        ("flow.yaml", lambda: hostile.yaml_flow_sequence(4 * MIB)),
        ("objects.json", lambda: hostile.json_list_of_empty_objects(16 * MIB)),
    ],
    ids=["yaml-4mb-flow-sequence", "json-16mb-list-of-objects"],
)
def test_huge_structured_uploads_are_refused_quickly_in_bounded_memory(server, uploader, filename, make):
    base, pid = server
    data = make()
    _warm_up(base, uploader, pid, len(data))
    before = _status_mb(pid, "VmHWM")
    start = time.monotonic()
    response = uploader(base, filename, data)
    elapsed = time.monotonic() - start
    growth = _status_mb(pid, "VmHWM") - before

    assert response.status_code == 400, response.text[:500]
    assert growth < GROWTH_BOUND_MB, f"the web process grew by {growth:.0f} MB"
    assert elapsed < REFUSAL_SECONDS, f"refused after {elapsed:.1f} s"
    message = response.json()["error"]["message"]
    assert filename in message and "KNOWLEDGE_MAX_OPENAPI_NODES" in message, message
    assert not Document.objects.filter(collection=uploader.collection).exists()


def test_githubs_spec_uploads_as_json_and_yaml_in_bounded_memory(server, uploader, corpus):
    base, pid = server
    data = (corpus / "openapi" / "api.github.com.json").read_bytes()
    _warm_up(base, uploader, pid, len(data))
    as_yaml = yaml.dump(json.loads(data), Dumper=yaml.CSafeDumper).encode()
    for filename, content in (("api.github.com.json", data), ("api.github.com.yaml", as_yaml)):
        before = _status_mb(pid, "VmHWM")
        response = uploader(base, filename, content)
        growth = _status_mb(pid, "VmHWM") - before
        assert response.status_code == 201, response.text[:500]
        assert growth < GROWTH_BOUND_MB, f"{filename}: the web process grew by {growth:.0f} MB"
    stored = Document.objects.filter(collection=uploader.collection).values_list("filename", flat=True)
    assert sorted(stored) == ["api.github.com.json", "api.github.com.yaml"]
