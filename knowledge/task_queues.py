"""The two task queues, and the one way to put a task on either.

- The document queue (``KNOWLEDGE_DOCUMENT_QUEUE``): processing uploaded documents and the
  workers' probes. Every user waits for it, so nothing long runs there; its jobs are claimed
  fairly across uploaders (knowledge.processing_jobs).
- The long-work queue (``KNOWLEDGE_LONG_WORK_QUEUE``): source syncs, release gates and
  evaluations, each of which can take minutes. It has a cluster of workers of its own
  (``KNOWLEDGE_LONG_WORKERS``, started beside the document cluster by knowledge.worker_supervisor),
  so a sync crawling a slow site never holds the worker another user's upload needs.

Every task names its queue: django-q2 otherwise sends a task to the queue of the cluster that
queues it, and a sync (long work) queues the documents it reads.
"""

from __future__ import annotations

from django.conf import settings


def document_queue() -> str:
    return settings.KNOWLEDGE_DOCUMENT_QUEUE


def long_work_queue() -> str:
    return settings.KNOWLEDGE_LONG_WORK_QUEUE


def task_queue(func: str, *args, queue: str, q_options: dict | None = None, **options) -> str:
    """Queue ``func`` (a dotted name) with ``args`` on ``queue``; returns django-q2's task id."""
    from django_q.tasks import async_task

    return async_task(func, *args, q_options={**(q_options or {}), **options, "cluster": queue})


def queue_broker(queue: str):
    """django-q2's broker of ``queue``, a new one: each opens its own connection (Redis)."""
    from django_q.brokers import get_broker

    return get_broker(queue)
