"""The background worker as `make run` starts it (manage.py qcluster), on the test database.

Tests run tasks in-process; this one queues a document the way the web
application does and waits for a real worker to process it, so what only
happens in the worker's forked processes (its database connections) is covered.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from knowledge.models import Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.conftest import REPO_ROOT, test_database_url

TEXT = b"Holidays\n\nEveryone has twenty-five days of paid leave per year.\n"


@pytest.fixture
def worker(transactional_db, tmp_path):
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "KNOWLEDGE_SYNC_TASKS": "false",
        "KNOWLEDGE_MEDIA_ROOT": str(tmp_path / "media"),
    }
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"], cwd=REPO_ROOT, env=env, stdout=out, stderr=out
        )
    try:
        yield log
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.mark.slow
def test_a_queued_document_is_processed_by_the_worker(worker, alice, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # where the worker reads the stored original
    collection = collection_create(name="worker", owner=alice)
    document = document_upload(
        collection=collection,
        uploaded_by=alice,
        sync=False,
        upload=DocumentUpload(filename="leave.txt", data=TEXT),
    ).document
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        document.refresh_from_db()
        if document.status in (Document.Status.READY, Document.Status.FAILED):
            break
        time.sleep(1)
    log = worker.read_text()
    assert document.status == Document.Status.READY, (document.status, document.error, log[-3000:])
    assert document.chunks.exists()
    assert "Traceback" not in log, log[-3000:]
