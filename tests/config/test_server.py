"""The production web server (scripts/serve.sh, what `make run` serves with) under many clients.

The server that `make run` used to start (the development server with
persistent connections) opened a database connection in every request thread
and left it open when the thread ended: fresh client connections piled up until
PostgreSQL refused new ones ("too many clients already"). These tests start the
real server against the test database and check that its connections stay
within its pool however many clients come and go, including answer streams
that clients abandon half-way, and that answer streams still stream.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest
from django.db import connection

from accounts.api_tokens import token_create
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.served import served_application

POOL_SIZE = 4
WEB_PROCESSES = 2  # each with its own pool of POOL_SIZE
DOCUMENT_TEXT = (
    "Expense policy\n\nEmployees may claim travel costs within thirty days. "
    "Receipts are required for every claim above twenty euros.\n\n"
    "Holidays\n\nEveryone has twenty-five days of paid leave per year."
)


@pytest.fixture
def served(transactional_db, tmp_path):
    """The real server on the test database, with a small connection pool in each of its processes."""
    with served_application(
        tmp_path,
        DB_POOL_MAX_SIZE=str(POOL_SIZE),
        WEB_WORKERS=str(WEB_PROCESSES),
        API_THROTTLE_RETRIEVE="100000/minute",
        DB_POOL_MAX_IDLE="1",
    ) as port:
        yield port


@pytest.fixture
def asker(alice):
    collection = collection_create(name="policies", owner=alice)
    result = document_upload(
        collection=collection,
        uploaded_by=alice,
        sync=True,
        upload=DocumentUpload(filename="policy.txt", data=DOCUMENT_TEXT.encode()),
    )
    result.document.refresh_from_db()
    assert result.document.status == "ready", result.document.error
    _, secret = token_create(user=alice, name="load")
    return secret, collection.pk


def _server_connections() -> int:
    """Client connections to the test database other than this test's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def _request(
    port: int, method: str, path: str, token: str, body: dict | None = None, accept="application/json"
):
    """One request on a connection of its own, as browsers and scripts without keep-alive make them."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"Authorization": f"Bearer {token}", "Accept": accept, "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _abandoned_stream(port: int, token: str, collection_id: int) -> None:
    """Start an answer stream, read its first bytes and hang up."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = json.dumps(
        {"question": "How long do I have to claim travel costs?", "collections": [collection_id]}
    )
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "text/event-stream",
        "Content-Type": "application/json",
    }
    conn.request("POST", "/api/v1/query/", body=body, headers=headers)
    response = conn.getresponse()
    assert response.status == 200
    response.read1(16)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def _in_threads(work, count: int, threads: int = 10) -> list:
    """``work(n)`` for n in range(count) on ``threads`` threads; the first failure is raised here."""
    results, failures, lock = [], [], threading.Lock()

    def run(batch: range):
        for n in batch:
            try:
                outcome = work(n)
            except Exception as exc:  # raised again below, in the test's thread
                with lock:
                    failures.append(exc)
                return
            with lock:
                results.append(outcome)

    workers = [threading.Thread(target=run, args=(range(i, count, threads),)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        raise failures[0]
    return results


@pytest.mark.security
@pytest.mark.slow
def test_connections_stay_within_the_pool_however_many_clients_come_and_go(served, asker):
    token, collection_id = asker
    before = _server_connections()

    def mixed(n: int):
        if n % 3 == 0:
            return _request(served, "GET", "/api/v1/collections/", token)[0]
        question = {"question": "How many days of paid leave?", "collections": [collection_id]}
        return _request(served, "POST", "/api/v1/retrieve/", token, question)[0]

    statuses = _in_threads(mixed, 240)
    _in_threads(lambda n: _abandoned_stream(served, token, collection_id), 12, threads=6)
    statuses += _in_threads(mixed, 120)

    assert set(statuses) == {200}
    assert _server_connections() - before <= WEB_PROCESSES * POOL_SIZE


@pytest.mark.slow
def test_connections_go_back_to_their_idle_level_after_a_burst(served, asker):
    token, collection_id = asker
    question = {"question": "How many days of paid leave?", "collections": [collection_id]}

    def retrieve(n: int) -> int:
        return _request(served, "POST", "/api/v1/retrieve/", token, question)[0]

    _in_threads(retrieve, WEB_PROCESSES)
    idle = _server_connections()  # each process has its model loaded and at least one connection
    peak, burst_done = [idle], threading.Event()

    def sample_peak() -> None:
        while not burst_done.is_set():
            peak.append(_server_connections())
            time.sleep(0.1)
        connection.close()  # this thread's own

    sampler = threading.Thread(target=sample_peak)
    sampler.start()
    try:
        statuses = _in_threads(retrieve, 160)
    finally:
        burst_done.set()
        sampler.join()
    assert set(statuses) == {200} and max(peak) > idle  # the burst needed more connections than idle

    # Each pool closes one unused connection per DB_POOL_MAX_IDLE (1 s here).
    deadline = time.monotonic() + 30
    while _server_connections() > idle and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _server_connections() <= idle


@pytest.mark.slow
def test_answer_streams_complete_concurrently(served, asker):
    token, collection_id = asker
    body = {"question": "How long do I have to claim travel costs?", "collections": [collection_id]}

    def stream(n: int):
        return _request(served, "POST", "/api/v1/query/", token, body, accept="text/event-stream")

    results = _in_threads(stream, 8, threads=8)
    for status, text in results:
        assert status == 200
        events = [line for line in text.decode().splitlines() if line.startswith("event: ")]
        # Every stage arrives as its own event, in order, ending with the answer.
        assert events[0] == "event: execution_start"
        assert "event: final_answer" in events and "event: error" not in events
        assert b"thirty days" in text
