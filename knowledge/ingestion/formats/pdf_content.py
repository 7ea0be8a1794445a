"""The size of what pypdf must interpret to read a PDF's pages, judged before any page is read.

pypdf's text extraction interprets every operator of a page's content stream
(and of the form XObjects the page draws), about a second per few megabytes. A
420 KB PDF of 2,000 pages sharing one content stream of 950,000 empty text
operators decodes that stream once but interprets it 2,000 times: hours of
work. So the decoded content of every page is measured first, a shared stream
counting again for each page that uses it, and a page or a document over its
limit is refused before pypdf parses any of it.

Decoded sizes are taken without keeping the decoded bytes where that is cheap
(plain Flate streams are inflated only up to the limit), so a content stream
that inflates into gigabytes is refused as quickly as a long one.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from knowledge.ingestion.limits import IngestLimits, LimitExceeded

_MIB = 1024 * 1024
# Forms inside forms: deeper nesting than this is not followed (pypdf's own extraction stops too).
_MAX_FORM_DEPTH = 10


def pdf_content_check(pages: Iterable, limits: IngestLimits) -> None:
    """Raise LimitExceeded when a page, or all pages together, hold more content than allowed."""
    sizes: dict[object, int] = {}  # decoded size per stream object, so a shared stream is decoded once
    total = 0
    for number, page in enumerate(pages, start=1):
        size = _page_content_size(page, sizes, limits.max_pdf_page_content_bytes)
        if size > limits.max_pdf_page_content_bytes:
            raise LimitExceeded(
                f"page {number} of the PDF holds more than {limits.max_pdf_page_content_bytes // _MIB:,} MB "
                "of drawing instructions",
                limits.max_pdf_page_content_bytes // _MIB,
                "max_pdf_page_content_bytes",
                "MB per page",
            )
        total += size
        if total > limits.max_pdf_content_bytes:
            raise LimitExceeded(
                f"its first {number:,} pages hold {total / _MIB:,.0f} MB of drawing instructions "
                "(a stream shared by several pages counts for each)",
                limits.max_pdf_content_bytes // _MIB,
                "max_pdf_content_bytes",
                "MB",
            )


def pdf_page_content_size(page, *, limit: int) -> int:
    """The decoded size of what pypdf interprets to read ``page`` (just over ``limit`` when larger)."""
    return _page_content_size(page, {}, limit)


def _page_content_size(page, sizes: dict, limit: int) -> int:
    streams = list(_streams(page.get("/Contents")))
    streams.extend(_form_streams(page.get("/Resources"), depth=0, seen=set()))
    total = 0
    for stream in streams:
        total += _decoded_size(stream, sizes, limit)
        if total > limit:  # no need to size the rest of an oversized page
            break
    return total


def _streams(contents) -> Iterable:
    """The stream objects of a page's /Contents (one stream or an array of them)."""
    if contents is None:
        return []
    contents = contents.get_object()
    if isinstance(contents, list):
        return [item.get_object() for item in contents]
    return [contents]


def _form_streams(resources, *, depth: int, seen: set) -> Iterable:
    """Form XObjects a page may draw (pypdf reads their operators too), each counted once per page."""
    if resources is None or depth > _MAX_FORM_DEPTH:
        return
    xobjects = resources.get_object().get("/XObject")
    if xobjects is None:
        return
    for reference in xobjects.get_object().values():
        key = _key(reference)
        form = reference.get_object()
        if key in seen or form.get("/Subtype") != "/Form":
            continue
        seen.add(key)
        yield form
        yield from _form_streams(form.get("/Resources"), depth=depth + 1, seen=seen)


def _key(reference) -> object:
    """An indirect object's number identifies a shared stream; a direct object only itself."""
    number = getattr(reference, "idnum", None)
    return ("ref", number, reference.generation) if number is not None else ("obj", id(reference))


def _decoded_size(stream, sizes: dict, limit: int) -> int:
    reference = getattr(stream, "indirect_reference", None)
    key = _key(reference) if reference is not None else ("obj", id(stream))
    if key not in sizes:
        sizes[key] = _measure(stream, limit)
    return sizes[key]


def _measure(stream, limit: int) -> int:
    """Decoded length, or just over ``limit`` when longer (a plain Flate stream stops inflating there)."""
    raw = getattr(stream, "_data", None)
    if stream.get("/Filter") in ("/FlateDecode", ["/FlateDecode"]) and stream.get("/DecodeParms") is None:
        inflater = zlib.decompressobj()
        try:
            return len(inflater.decompress(raw, limit + 1))
        except zlib.error:
            pass  # damaged streams: pypdf's own decoder is more forgiving; let it size them
    return len(stream.get_data())
