"""One user's queued documents do not hold back another user's.

Tasks leave the queue in the order they were queued; each one claims the
oldest queued job of the uploader with the fewest running jobs.
"""

from __future__ import annotations

import pytest

from knowledge.models import ProcessingJob
from knowledge.processing_jobs import job_claim_next
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from knowledge.tasks import process_document

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_worker(monkeypatch):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)  # tasks stay in the (ORM) queue: no worker runs here


def _queue(user, collection, name: str) -> ProcessingJob:
    text = (
        f"{name}: a short note about leave policy written by {user.username if user else 'nobody'}.".encode()
    )
    document = document_upload(
        collection=collection, uploaded_by=user, sync=False, upload=DocumentUpload(filename=name, data=text)
    )
    return ProcessingJob.objects.get(document=document.document)


def test_another_users_single_job_is_claimed_before_a_second_job_of_a_busy_user(alice, bob, no_worker):
    alices = collection_create(name="alice's", owner=alice)
    bobs = collection_create(name="bob's", owner=bob)
    first, second = _queue(alice, alices, "a1.txt"), _queue(alice, alices, "a2.txt")
    bobs_job = _queue(bob, bobs, "b1.txt")  # queued last

    running = job_claim_next(job_id=first.pk)
    assert running.job_id == first.pk  # nobody runs anything yet: the oldest job
    # The next task out of the queue is the one of Alice's second job; Bob's job goes first.
    claim = job_claim_next(job_id=second.pk)
    assert claim.job_id == bobs_job.pk
    assert claim.document_id == bobs_job.document_id
    # With one job running each, Alice's second job is next, for whichever task comes.
    assert job_claim_next(job_id=bobs_job.pk).job_id == second.pk
    assert job_claim_next(job_id=second.pk) is None


def _finish(claim) -> None:
    from knowledge.processing_jobs import job_finish

    assert job_finish(claim=claim)


def test_with_one_worker_uploaders_take_turns_instead_of_the_oldest_jobs_going_first(alice, bob, no_worker):
    """One worker: nobody has a job running between two jobs, so the fewest-running rule ties; the
    uploader served longest ago goes first, so a user's pile never holds another's single file."""
    alices = collection_create(name="alice's", owner=alice)
    bobs = collection_create(name="bob's", owner=bob)
    pile = [_queue(alice, alices, f"a{n}.txt") for n in range(4)]
    bobs_job = _queue(bob, bobs, "b1.txt")  # queued after the whole pile

    first = job_claim_next(job_id=pile[0].pk)
    assert first.job_id == pile[0].pk
    _finish(first)  # the one worker is free again: nothing runs
    second = job_claim_next(job_id=pile[1].pk)
    assert second.job_id == bobs_job.pk  # Bob was never served; Alice just was
    _finish(second)
    assert job_claim_next(job_id=pile[2].pk).job_id == pile[1].pk  # then Alice's turn again


def test_an_uploaders_new_document_goes_before_their_collections_rebuild(alice, no_worker):
    """A release's rebuild queues a job per document; the same user's fresh upload is not made to wait
    for all of them."""
    from knowledge.models import ChunkProfile

    alices = collection_create(name="alice's", owner=alice)
    rebuild = [_queue(alice, alices, f"old{n}.txt") for n in range(3)]
    profile = ChunkProfile.objects.create(name="rebuild profile", chunk_size=600, chunk_overlap=60)
    ProcessingJob.objects.filter(pk__in=[job.pk for job in rebuild]).update(chunk_profile=profile)
    fresh = _queue(alice, alices, "new.txt")

    assert job_claim_next(job_id=rebuild[0].pk).job_id == fresh.pk


def test_a_task_processes_the_job_it_claimed(alice, bob, no_worker):
    alices = collection_create(name="alice's", owner=alice)
    bobs = collection_create(name="bob's", owner=bob)
    first, second = _queue(alice, alices, "a1.txt"), _queue(alice, alices, "a2.txt")
    bobs_job = _queue(bob, bobs, "b1.txt")
    assert job_claim_next(job_id=first.pk).job_id == first.pk  # Alice's first document is being processed

    process_document(second.document_id, None, second.pk)  # the task of Alice's second job

    states = dict(ProcessingJob.objects.values_list("pk", "state"))
    assert states == {first.pk: "running", second.pk: "queued", bobs_job.pk: "done"}
    assert bobs_job.document.chunks.exists() and not second.document.chunks.exists()


def test_documents_without_an_uploader_share_one_count(alice, no_worker):
    notes = collection_create(name="notes", owner=alice)
    first, second = _queue(None, notes, "n1.txt"), _queue(None, notes, "n2.txt")  # the ingest command's
    alices = _queue(alice, notes, "a1.txt")
    assert job_claim_next(job_id=first.pk).job_id == first.pk
    # "Nobody" has a job running now, Alice none: hers goes before nobody's second.
    assert job_claim_next(job_id=second.pk).job_id == alices.pk


def test_an_inline_task_processes_its_own_document_for_the_caller_who_waits(alice, bob):
    alices = collection_create(name="alice's", owner=alice)
    bobs = collection_create(name="bob's", owner=bob)
    older = _queue_without_running(bob, bobs, "b1.txt")  # queued earlier, by someone else
    mine = document_upload(
        collection=alices,
        uploaded_by=alice,
        sync=True,
        upload=DocumentUpload(filename="a1.txt", data=b"Leave is requested two months ahead."),
    ).document
    mine.refresh_from_db()
    assert mine.status == "ready"
    assert ProcessingJob.objects.get(pk=older.pk).state == "queued"  # left for a worker


def _queue_without_running(user, collection, name: str) -> ProcessingJob:
    from django_q.conf import Conf

    saved, Conf.SYNC = Conf.SYNC, False
    try:
        return _queue(user, collection, name)
    finally:
        Conf.SYNC = saved
