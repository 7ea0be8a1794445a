"""knowledge_bench load: concurrent clients against a live server, over HTTP.

Each client keeps one HTTP connection and asks questions from the development
set (the documents it is about are put in a "bench-load" collection once, and
reused), mostly through ``/api/v1/retrieve/`` and a share through
``/api/v1/query/``, until the time is up. ``--users N`` spreads the clients
over N users (the collection is public, so each reads it), as real traffic
is spread: per-user throttles then count each user's share. While it runs, the database's
connections are sampled, and once before and after: a server that leaks
connections shows a count that does not come back to its idle level.
``--sse N`` then opens N answer streams at once and checks that each ends with
its final answer.

The server must use the same database as this command (the default with
``make run``), unless ``--token`` and ``--collection-id`` name what to use.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import connection

from accounts.api_tokens import token_create
from accounts.models import ApiToken
from knowledge.benchmarks.common import median, percentile
from knowledge.evaluation.questions import load_questions
from knowledge.models import Collection, Document
from knowledge.services.collections import collection_create, collection_update
from knowledge.services.documents import DocumentUpload, document_upload

LOAD_USER = "bench-load"
LOAD_COLLECTION = "bench-load"
LOAD_FILES = (
    "pdf/pasa.pdf",
    "office/dummy.docx",
    "office/dummy.pptx",
    "html/flag_day.html",
    "text/gravity_hill.md",
    "openapi/petstore-expanded-3.0.json",
    "django-docs/topics/signals.txt",
)
REQUEST_TIMEOUT = 120


@dataclass
class Sample:
    endpoint: str
    status: int  # 0: no HTTP answer (connection refused, reset, timeout)
    seconds: float
    failure: str = ""  # with status 0: what the connection raised


@dataclass
class Results:
    samples: list[Sample] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, sample: Sample) -> None:
        with self.lock:
            self.samples.append(sample)


@dataclass(frozen=True)
class LoadPlan:
    """How hard a load run presses: ``clients`` at once for ``seconds`` (a paired run's: per round and
    server), ``query_share`` of their requests to /query/ (the rest to /retrieve/), spread over
    ``users`` users."""

    clients: int
    seconds: float
    query_share: float
    users: int = 1


@dataclass(frozen=True)
class LoadWork:
    """What the clients ask with: the users' ``tokens`` (shared out among the clients), the
    collection, the questions, and the share of them asked through /query/."""

    tokens: list[str]
    collection_id: int
    questions: list[str]
    query_share: float


def run(
    stdout,
    *,
    url: str,
    plan: LoadPlan,
    sse: int,
    token: str | None,
    collection_id: int | None,
) -> dict:
    """``plan`` against the server at ``url``; with ``token`` and ``collection_id``, on what they name
    (a remote server) instead of the load users and collection made here."""
    if token is None or collection_id is None:
        tokens, collection_id = _prepare(stdout, users=plan.users)
    else:
        tokens = [token]
    token = tokens[0]
    questions = _questions()
    target = urlsplit(url)
    clients, seconds = plan.clients, plan.seconds
    stdout.write(
        f"{clients} clients of {len(tokens)} users for {seconds:.0f} s against {url} "
        f"({len(questions)} questions, {plan.query_share:.0%} answered through /query/)\n"
    )
    _warm_up(target, token, collection_id, questions[0])
    idle_before = _count_connections()
    results = Results()
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    work = LoadWork(tokens, collection_id, questions, plan.query_share)
    workers = clients_started(target, work, clients, deadline, results)
    _sample_connections(results, deadline, stdout)
    for worker in workers:
        worker.join(timeout=REQUEST_TIMEOUT)
    elapsed = time.monotonic() - started
    figures = _figures(results, clients=clients, seconds=elapsed)
    figures["users"] = len(tokens)
    figures["db_connections"].update(idle_before=idle_before, idle_after=_idle_again(idle_before, stdout))
    if sse:
        figures["sse"] = _sse_streams(target, token, collection_id, questions, sse)
    _print(stdout, figures)
    stdout.write(json.dumps(figures) + "\n")
    return figures


def clients_started(target, work: LoadWork, clients: int, deadline: float, results: Results) -> list:
    """``clients`` threads asking until ``deadline``, each with one connection and one of the work's
    tokens in turn."""
    tokens = work.tokens
    workers = [
        threading.Thread(
            target=_client,
            args=(target, work, tokens[n % len(tokens)], deadline, results, random.Random(n)),
            daemon=True,
        )
        for n in range(clients)
    ]
    for worker in workers:
        worker.start()
    return workers


def _prepare(stdout, *, users: int) -> tuple[list[str], int]:
    """Fresh tokens of the load users and the load collection with its documents (made once)."""
    names = [LOAD_USER] + [f"{LOAD_USER}-{n}" for n in range(2, users + 1)]
    secrets = [_fresh_token(username) for username in names]
    owner = get_user_model().objects.get(username=LOAD_USER)
    collection = Collection.objects.filter(owner=owner, name=LOAD_COLLECTION).first()
    if collection is None:
        collection = collection_create(name=LOAD_COLLECTION, owner=owner)
    if users > 1 and collection.visibility != Collection.Visibility.PUBLIC:
        collection = collection_update(collection=collection, visibility=Collection.Visibility.PUBLIC)
    corpus = Path(settings.BASE_DIR).parent / "shared" / "corpus"
    for name in LOAD_FILES:
        path = corpus / name
        if not collection.documents.filter(filename=path.name, status=Document.Status.READY).exists():
            stdout.write(f"  processing {name} for the load collection (once)\n")
            document_upload(
                collection=collection,
                uploaded_by=owner,
                sync=True,
                upload=DocumentUpload(filename=path.name, data=path.read_bytes()),
            )
    return secrets, collection.pk


def _fresh_token(username: str) -> str:
    user, _ = get_user_model().objects.get_or_create(username=username)
    ApiToken.objects.filter(user=user, name="load", revoked_at__isnull=True).delete()
    return token_create(user=user, name="load")[1]


def _questions() -> list[str]:
    """Development-set questions about the load documents, and its questions with no answer."""
    path = Path(settings.BASE_DIR) / "tests" / "data" / "dev_questions.jsonl"
    names = {Path(name).name.lower() for name in LOAD_FILES}
    return [
        q.question
        for q in load_questions(path).questions
        if {document for document, _ in q.expected} <= names  # no-answer questions expect nothing
    ]


def _warm_up(target, token, collection_id, question: str) -> None:
    """One request per endpoint before the clock starts: the server loads its model on first use."""
    conn = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=REQUEST_TIMEOUT)
    try:
        for endpoint in ("retrieve", "query"):
            status, text = _post(
                conn, f"/api/v1/{endpoint}/", token, {"question": question, "collections": [collection_id]}
            )
            if status != 200:
                raise CommandError(f"{endpoint}: the server answered {status}: {text[:300]!r}")
    except (OSError, http.client.HTTPException) as exc:
        raise CommandError(f"cannot reach the server: {exc}") from exc
    finally:
        conn.close()


def _client(target, work: LoadWork, token: str, deadline: float, results: Results, rng) -> None:
    conn = None
    while time.monotonic() < deadline:
        endpoint = "query" if rng.random() < work.query_share else "retrieve"
        body = {"question": rng.choice(work.questions), "collections": [work.collection_id]}
        conn = conn or http.client.HTTPConnection(target.hostname, target.port or 80, timeout=REQUEST_TIMEOUT)
        started = time.monotonic()
        failure = ""
        try:
            status, _ = _post(conn, f"/api/v1/{endpoint}/", token, body)
        except (OSError, http.client.HTTPException) as exc:
            status, conn, failure = 0, None, type(exc).__name__
        results.add(Sample(endpoint, status, time.monotonic() - started, failure))


def _post(conn, path: str, token: str, body: dict, accept: str = "application/json") -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": accept}
    conn.request("POST", path, body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def _count_connections() -> int:
    """The database's client connections, other than this command's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def _idle_again(idle_before: int, stdout, settle_seconds: float = 180.0) -> int:
    """The connection count once it is back at its idle level, or after ``settle_seconds``.

    The server's pools close one unused connection every DB_POOL_MAX_IDLE seconds (5 by default),
    so two processes that grew to 20 connections each are back in about 100 s.
    """
    give_up = time.monotonic() + settle_seconds
    count = _count_connections()
    while count > idle_before and time.monotonic() < give_up:
        stdout.write(f"\r  waiting for the idle level: {count} database connections, {idle_before} before   ")
        stdout.flush()
        time.sleep(2.0)
        count = _count_connections()
    stdout.write("\n")
    return count


def _sample_connections(results: Results, deadline: float, stdout) -> None:
    """Count the database's client connections every two seconds until the run ends."""
    while time.monotonic() < deadline:
        results.connections.append(_count_connections())
        with results.lock:
            done = len(results.samples)
        stdout.write(f"\r  {done} requests, {results.connections[-1]} database connections   ")
        stdout.flush()
        time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
    stdout.write("\n")


def _figures(results: Results, *, clients: int, seconds: float) -> dict:
    figures = {"benchmark": "load", "clients": clients, "seconds": round(seconds, 1)}
    for endpoint in ("retrieve", "query", "all"):
        samples = [s for s in results.samples if endpoint in ("all", s.endpoint)]
        figures[endpoint] = _endpoint_figures(samples, seconds)
    counts = results.connections or [0]
    figures["db_connections"] = {
        "first": counts[0],
        "last": counts[-1],
        "min": min(counts),
        "max": max(counts),
    }
    return figures


def _endpoint_figures(samples: list[Sample], seconds: float) -> dict:
    ok = [s.seconds * 1000 for s in samples if 200 <= s.status < 300]
    errors = Counter(str(s.status or s.failure) for s in samples if not 200 <= s.status < 300)
    return {
        "requests": len(samples),
        "requests_per_s": round(len(samples) / seconds, 1) if seconds else 0.0,
        "p50_ms": round(median(ok), 1),
        "p95_ms": round(percentile(ok, 95), 1) if ok else 0.0,
        "max_ms": round(max(ok), 1) if ok else 0.0,
        "errors": sum(errors.values()),
        "errors_by_status": dict(errors),
    }


def _sse_streams(target, token, collection_id, questions, count: int) -> dict:
    """``count`` answer streams at once; each must end with its final answer."""
    outcomes: list[tuple[bool, float]] = []
    lock = threading.Lock()

    def stream(n: int) -> None:
        conn = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=REQUEST_TIMEOUT)
        started = time.monotonic()
        try:
            body = {"question": questions[n % len(questions)], "collections": [collection_id]}
            status, text = _post(conn, "/api/v1/query/", token, body, accept="text/event-stream")
            complete = status == 200 and b"event: final_answer" in text and b"event: error" not in text
        except (OSError, http.client.HTTPException):
            complete = False
        finally:
            conn.close()
        with lock:
            outcomes.append((complete, time.monotonic() - started))

    threads = [threading.Thread(target=stream, args=(n,), daemon=True) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=REQUEST_TIMEOUT * 2)
    durations = [seconds * 1000 for _, seconds in outcomes]
    return {
        "streams": count,
        "completed": sum(1 for complete, _ in outcomes if complete),
        "p50_ms": round(median(durations), 1),
        "max_ms": round(max(durations), 1) if durations else 0.0,
    }


def _print(stdout, figures: dict) -> None:
    stdout.write(
        f"{'endpoint':<10} {'requests':>8} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'max ms':>8} {'errors':>6}\n"
    )
    for endpoint in ("retrieve", "query", "all"):
        f = figures[endpoint]
        stdout.write(
            f"{endpoint:<10} {f['requests']:>8} {f['requests_per_s']:>7} {f['p50_ms']:>8} "
            f"{f['p95_ms']:>8} {f['max_ms']:>8} {f['errors']:>6}\n"
        )
    db = figures["db_connections"]
    stdout.write(
        f"database connections: idle before {db['idle_before']}, during min {db['min']} max {db['max']}, "
        f"idle after {db['idle_after']}\n"
    )
    if "sse" in figures:
        s = figures["sse"]
        stdout.write(
            f"answer streams: {s['completed']} of {s['streams']} complete, "
            f"p50 {s['p50_ms']} ms, max {s['max_ms']} ms\n"
        )
