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
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class SyncChainASGIHandler(ASGIHandler):
    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # What Django does to a synchronous chain's top (adapt_method_mode), once for the whole chain.
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)
