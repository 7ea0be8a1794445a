"""The web processes' ASGI handler: the middleware chain and the view in one thread hop."""

from __future__ import annotations

import threading

import asgiref.sync
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished, request_started
from django.http import HttpResponse, StreamingHttpResponse
from django.test import override_settings
from django.urls import path

from config.asgi_handler import RequestThread, SyncChainASGIHandler


def _plain(request):
    return HttpResponse(f"{request.method} {request.path}")


def _stream(request):
    async def parts():
        for part in ("one ", "two"):
            yield part

    return StreamingHttpResponse(parts(), content_type="text/event-stream")


urlpatterns = [path("plain/", _plain), path("stream/", _stream)]


def _get(handler, path_: str) -> tuple[int, bytes]:
    async def run():
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path_,
            "raw_path": path_.encode(),
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1")],
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000),
        }
        app = ApplicationCommunicator(handler, scope)
        await app.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await app.receive_output(10)
        body = b""
        while True:
            message = await app.receive_output(10)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await app.wait(10)
        return start["status"], body

    return async_to_sync(run)()


@override_settings(ROOT_URLCONF=__name__)
def test_the_whole_chain_runs_without_returning_to_the_event_loop(monkeypatch):
    """With the project's real middleware, a request never crosses back from its thread to the loop."""
    crossings = []
    original = asgiref.sync.AsyncToSync.__call__

    def counted(self, *args, **kwargs):
        name = getattr(self.awaitable, "__qualname__", repr(self.awaitable))
        if name != "_get.<locals>.run":  # the test's own way into the loop
            crossings.append(name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(asgiref.sync.AsyncToSync, "__call__", counted)
    assert _get(ASGIHandler(), "/plain/") == (200, b"GET /plain/")
    assert crossings, "Django's own handler crosses back to the loop (for axes' asynchronous mode)"
    crossings.clear()
    assert _get(SyncChainASGIHandler(), "/plain/") == (200, b"GET /plain/")
    assert crossings == []


@override_settings(ROOT_URLCONF=__name__)
def test_an_asynchronous_stream_still_streams():
    assert _get(SyncChainASGIHandler(), "/stream/") == (200, b"one two")


def _thread_name(request):
    return HttpResponse(threading.current_thread().name)


urlpatterns.append(path("thread/", _thread_name))


@override_settings(ROOT_URLCONF=__name__)
def test_a_requests_calls_share_one_thread_which_later_requests_reuse():
    """The request signals' receivers and the view run on one thread, kept for the next request."""
    handler = SyncChainASGIHandler()
    seen = []

    def started(**kwargs):
        seen.append(("started", threading.current_thread().name))

    def finished(**kwargs):
        seen.append(("finished", threading.current_thread().name))

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        status, first = _get(handler, "/thread/")
        assert status == 200 and first.decode().startswith("request")
        assert seen == [("started", first.decode()), ("finished", first.decode())]
        assert _get(handler, "/thread/") == (200, first)  # the same thread again, not a new one
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert len(handler._idle_threads) == 1


def test_a_thread_still_running_a_call_is_not_kept():
    handler = SyncChainASGIHandler()
    busy, release = RequestThread(), threading.Event()
    running = busy.submit(release.wait, 10)
    assert not busy.idle
    handler._release(busy)
    assert handler._idle_threads == []  # a new request must not wait behind the old call
    release.set()
    assert running.result(10) is True
    free = RequestThread()
    assert free.submit(lambda: 1).result(10) == 1 and free.idle
    handler._release(free)
    assert handler._idle_threads == [free]
