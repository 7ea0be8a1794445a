"""A source on a schedule is synced by itself by the workers `make run` starts: the long-work
queue's cluster (manage.py qcluster with Q_CLUSTER_NAME, knowledge.task_queues) takes the sync, and
the document queue's cluster processes what it read."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import time

import pytest
from django.utils import timezone
from django_q.models import Schedule

from knowledge.models import Document, SourceSync
from knowledge.services.collections import collection_create
from knowledge.services.sources import SourceSpec, schedule_name, source_add, source_delete
from tests.conftest import CORPUS, REPO_ROOT, test_database_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def folder_and_worker(tmp_path, settings):
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "gravity_hill.md").write_bytes((CORPUS / "text" / "gravity_hill.md").read_bytes())
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    settings.MEDIA_ROOT = tmp_path / "media"
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "KNOWLEDGE_SYNC_TASKS": "false",
        "KNOWLEDGE_MEDIA_ROOT": str(tmp_path / "media"),
        "KNOWLEDGE_SOURCES_FOLDER_ROOTS": str(tmp_path.resolve()),
    }
    with log.open("w") as out:
        processes = [
            subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=REPO_ROOT,
                env={**env, "Q_CLUSTER_NAME": queue},
                stdout=out,
                stderr=out,
            )
            for queue in ("knowledge", "knowledge-long")
        ]
    try:
        yield folder, log
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


@pytest.mark.slow
def test_a_source_on_a_cron_schedule_is_synced_by_the_workers_by_itself(folder_and_worker, alice):
    folder, log = folder_and_worker
    collection = collection_create(name="scheduled", owner=alice)
    # Hourly (the most a schedule may), at a minute that comes within two: the next but one, so that
    # it is still ahead when the schedule is saved.
    minute = (timezone.localtime() + datetime.timedelta(minutes=2)).minute
    source = source_add(
        collection=collection,
        spec=SourceSpec(location=str(folder), kind="folder", cron=f"{minute} * * * *"),
        user=alice,
        operator=True,
    )
    assert Schedule.objects.filter(name=schedule_name(source.pk), schedule_type=Schedule.CRON).exists()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        ready = Document.objects.filter(collection=collection, status=Document.Status.READY).exists()
        if ready and SourceSync.objects.filter(source=source, trigger="schedule").exists():
            break
        time.sleep(2)
    run = SourceSync.objects.filter(source=source, trigger="schedule").first()
    assert run is not None, log.read_text()[-3000:]
    assert (run.status, run.added) == ("succeeded", 1), (run.error, run.errors)
    assert Document.objects.filter(collection=collection, status=Document.Status.READY).count() == 1
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]

    source_delete(source=source)  # stops the schedule with the source
    assert not Schedule.objects.filter(name=schedule_name(source.pk)).exists()
