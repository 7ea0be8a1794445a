"""Server-Sent Events: a chat's events as ``text/event-stream`` text, and the response that streams them
under both WSGI and ASGI (pages and the API share it, so it lives below both).

The answer stream is a synchronous generator: retrieval, the embedder and the
LLM client are blocking code. Django buffers a synchronous iterator completely
when it serves it over ASGI (and an asynchronous one over WSGI), so the events
would arrive all at once at the end. Under ASGI the generator is therefore
advanced in a thread of its own, one event at a time, and the database
connection that thread opened is closed when the stream ends: the request's
own clean-up runs in a different thread and would never see it.

A stream may last as long as the LLM takes to write its answer, so it gives
its database connection back to the pool after every event (never inside a
transaction) and takes one again only when it next needs it: fifty open streams
do not need fifty connections.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

from django.core.handlers.asgi import ASGIRequest
from django.db import connections
from django.http import StreamingHttpResponse

from config.base.connections import release_connections
from config.base.errors import KnowledgeError
from knowledge.models import ChatTurn
from knowledge.synthesis import events as ev
from knowledge.synthesis.events import Event

logger = logging.getLogger(__name__)

_END = object()


def sse_stream(events: Iterable[Event]) -> Iterator[str]:
    """``text/event-stream`` text for a StreamingHttpResponse; a failure ends it with an ``error`` event."""
    yield ": answer stream\n\n"  # sends the headers at once, before retrieval starts
    try:
        for event in events:
            yield ev.sse(event)
    except KnowledgeError as exc:
        yield ev.sse(Event(ev.ERROR, {"message": str(exc), "status": exc.status_code}))
    except Exception:
        logger.exception("the answer stream failed")
        yield ev.sse(Event(ev.ERROR, {"message": "the answer could not be completed", "status": 500}))


def turn_events(turn: ChatTurn) -> list[Event]:
    """A saved turn's events, for replay."""
    return [Event.from_dict(stored) for stored in turn.events]


def sse_replay(turn: ChatTurn) -> Iterator[str]:
    return sse_stream(turn_events(turn))


def event_stream_response(lines: Iterable[str], *, request) -> StreamingHttpResponse:
    django_request = getattr(request, "_request", request)  # a DRF Request wraps Django's
    lines = _releasing_connections(lines)
    content = _in_own_thread(lines) if isinstance(django_request, ASGIRequest) else lines
    release_connections()  # the view is done with the database; the stream takes its own
    response = StreamingHttpResponse(content, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # let proxies pass events through as they come
    return response


async def _in_own_thread(lines: Iterator[str]) -> AsyncIterator[str]:
    # One thread for the whole stream: the generator may hold a transaction or
    # a connection between two events, and those belong to the thread that made them.
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="event-stream")
    loop = asyncio.get_running_loop()
    try:
        while (line := await loop.run_in_executor(executor, next, lines, _END)) is not _END:
            yield line
    finally:
        await loop.run_in_executor(executor, _finish, lines)
        executor.shutdown(wait=False)


def _releasing_connections(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        release_connections()
        yield line


def _finish(lines: Iterator[str]) -> None:
    """Close the generator (a client that left stops the work) and this thread's connections."""
    close = getattr(lines, "close", None)
    if close is not None:
        close()
    connections.close_all()
