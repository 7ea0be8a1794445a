"""Static files through whitenoise, streamed without blocking when the server is ASGI.

Whitenoise answers with a file response whose content is a plain (synchronous)
iterator. Under ASGI Django then reads the whole file in a worker thread before
sending anything and warns on every such response. Here the same file is
handed to the server as an asynchronous iterator that reads each block in a
thread, so the event loop never waits on the disk. Under WSGI (the development
server) whitenoise's response is used unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from whitenoise.middleware import WhiteNoiseMiddleware

_END = object()


async def _blocks_in_thread(blocks: Iterator[bytes]) -> AsyncIterator[bytes]:
    read_next = sync_to_async(next, thread_sensitive=False)
    while (block := await read_next(blocks, _END)) is not _END:
        yield block


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    @staticmethod
    def serve(static_file, request):
        # Files are answered before any other middleware reads the host: check ALLOWED_HOSTS
        # here too (DisallowedHost is a 400), so no host name outside it gets any answer.
        request.get_host()
        response = WhiteNoiseMiddleware.serve(static_file, request)
        if isinstance(request, ASGIRequest) and response.streaming and not response.is_async:
            # The file stays registered for closing (FileResponse did it), whatever iterates it.
            response.streaming_content = _blocks_in_thread(iter(response.streaming_content))
        return response
