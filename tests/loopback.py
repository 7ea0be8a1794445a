"""What the tests' loopback HTTP servers share: a port on 127.0.0.1, scripted replies, a stop.

tests/synthesis/openai_server.py (chat completions) and tests/model_server.py (embeddings and
rerank) speak different routes with the same controls: replies scripted per request (one consumed
per request, then ``default``), every request recorded, and ``stop()`` closing the port so later
calls are refused.
"""

from __future__ import annotations

import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    handler: type[BaseHTTPRequestHandler]  # the subclass's; it reaches the server as ``owner``

    def __init__(self, default) -> None:
        self.requests: list = []
        self.replies: deque = deque()
        self.default = default
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def start(self):
        handler = type("Handler", (self.handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the port: connections after this are refused."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    url = base_url

    def script(self, *replies) -> None:
        """Answer the next requests with these replies, in order; then with ``default``."""
        with self._lock:
            self.replies.extend(replies)

    def pause(self, seconds: float) -> bool:
        """Sleep unless the server stops; False when stopping."""
        return not self._stopping.wait(seconds)
