"""Django's ASGI handler with the middleware chain run synchronously: one thread hop per request.

Every middleware here can run synchronously, and every view is synchronous
(answer streams are synchronous views whose responses are asynchronous
iterators, knowledge/chat/sse.py). Django's own ASGI handler builds the chain
for asynchronous use instead, and whitenoise and our NUL guard are
synchronous only, so a request crossed between the event loop and its thread
three times: into the thread for the outer middleware, back to the loop for
the inner ones (axes), into the thread again for the view. Each crossing is a
future, a wake-up of the loop and a switch of the interpreter lock; under
load the crossings took about an eighth of a web process's CPU (py-spy, 20
clients on /api/v1/retrieve/). Here the chain and the view run in one call
in the request's thread, the way Django runs them under WSGI. An
asynchronous view would still work (Django calls it through async_to_sync).

A request's synchronous calls (the request signals, the chain, closing the
response) still share one thread, as under Django's handler, but the thread is
kept for later requests instead of being started and joined for each one
(0.4 ms of CPU per request, a twentieth of a retrieve request's in the web
process): the way a WSGI server's threads serve one request after another.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler

# Threads kept idle per process; more requests at once than this start (and later end) threads of their own.
IDLE_REQUEST_THREADS = 64


class RequestThread(ThreadPoolExecutor):
    """One thread running one request's synchronous calls in turn; it knows when it has none left."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="request")
        self._unfinished = 0
        self._count_lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs):
        with self._count_lock:
            self._unfinished += 1

        def counted():
            try:
                return fn(*args, **kwargs)
            finally:
                with self._count_lock:
                    self._unfinished -= 1

        return super().submit(counted)

    @property
    def idle(self) -> bool:
        with self._count_lock:
            return self._unfinished == 0


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._idle_threads: list[RequestThread] = []  # touched on the event loop's thread only

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # What Django does to a synchronous chain's top (adapt_method_mode), once for the whole chain.
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)  # which refuses it
        thread = self._idle_threads.pop() if self._idle_threads else RequestThread()
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.handle(scope, receive, send)
        finally:
            self._release(thread)

    def _release(self, thread: RequestThread) -> None:
        """Keep the thread for the next request, unless a call of this one still runs on it (a client
        that went away leaves its view running) or enough threads are idle already."""
        if thread.idle and len(self._idle_threads) < IDLE_REQUEST_THREADS:
            self._idle_threads.append(thread)
        else:
            thread.shutdown(wait=False)  # its thread ends once its last call returns
