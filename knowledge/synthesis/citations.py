"""[Source N] markers: parse, check against the retrieved sources, link to their location.

The numbers are the ones the context gave the model (docs/design.md#evaluation), kept as they
are; the answer's source list holds only the sources it cites. A marker that
points at no source in the context is removed and counted.
"""

from __future__ import annotations

import html
import re
from dataclasses import asdict, dataclass, fields

from knowledge.retrieval.passages import source_fields
from knowledge.synthesis.quotes import quote_range_format, quote_span
from knowledge.synthesis.refusal import CLOSEST_HEADING
from knowledge.text.inline_markdown import inline_html, inline_segments, styled_html

# [Source 1]  [Source 1, 3]  [Sources 1-2]  [source: 4]  [Source 1 and Source 2]  [Source #2]
MARKER = re.compile(
    r"([ \t]*)\[\s*sources?\s*:?\s*#?\s*(\d+(?:\s*(?:[-–—,;&]|and|or)\s*(?:sources?\s*)?#?\s*\d+)*)\s*\]",
    re.IGNORECASE,
)
_NUMBER_OR_RANGE = re.compile(r"(\d+)\s*[-–—]\s*(\d+)|(\d+)")
MAX_RANGE = 50  # "[Sources 1-9999]" is noise, not a citation


@dataclass(frozen=True)
class Citation:
    n: int
    chunk_id: int
    document_id: int
    collection_id: int
    document: str  # the file name
    title: str
    source_ref: str
    page: int | None
    url: str
    text: str  # the cited chunk, as the model saw it
    # Where the document lives when a source brought it (the page's URL, the file at its commit); "".
    origin_url: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


# A citation's fields are read from its retrieved chunk like every other shape's.
CITATION_FIELDS = tuple(field.name for field in fields(Citation))


@dataclass(frozen=True)
class CitedAnswer:
    text: str
    citations: list[Citation]
    dropped: int


def marker_numbers(marker_body: str) -> list[int]:
    numbers: list[int] = []
    for match in _NUMBER_OR_RANGE.finditer(marker_body):
        if match.group(3):
            numbers.append(int(match.group(3)))
            continue
        low, high = sorted((int(match.group(1)), int(match.group(2))))
        # An absurd range counts as one bad number rather than thousands.
        numbers.extend(range(low, high + 1) if high - low <= MAX_RANGE else [0])
    return numbers


def resolve_citations(text: str, sources: list) -> CitedAnswer:
    """Map markers to ``sources`` (RetrievedChunks with source_number); drop and count the rest."""
    by_number = {s.source_number: s for s in sources if s.source_number}
    cited: dict[int, Citation] = {}
    dropped = 0

    def replace(match: re.Match) -> str:
        nonlocal dropped
        valid = []
        for n in marker_numbers(match.group(2)):
            if n not in by_number:
                dropped += 1
            elif n not in valid:
                valid.append(n)
                cited.setdefault(n, citation_for(by_number[n]))
        # A marker removed whole takes its leading space with it: "claim [Source 9]." -> "claim."
        return match.group(1) + "".join(f"[Source {n}]" for n in valid) if valid else ""

    cleaned = MARKER.sub(replace, text).strip()
    ordered = sorted(cited.values(), key=lambda c: c.n)
    return CitedAnswer(cleaned, ordered, dropped)


def citation_for(retrieved) -> Citation:
    return Citation(**source_fields(retrieved, CITATION_FIELDS))


# A sentence in double quotes right before its marker may quote the cited passage (the
# extractive answer writes `- "sentence" [Source N]`): when it does, its link says where.
_QUOTED_BEFORE = re.compile(r'"([^"\n]{1,1000})"\s*$')
_SOURCE_MARKER = re.compile(r"\[Source (\d+)\]")
_BULLET = re.compile(r"^[-*•]\s+")


def answer_html(text: str, citations: list[Citation], closest: list[dict] = ()) -> str:
    """The answer as safe HTML: paragraphs, bullet lists, inline Markdown (code, emphasis,
    strikethrough), linked [Source N].

    The only links are the [Source N] markers, to our own citation viewer. A
    Markdown link in the answer is shown as its text with the URL after it:
    answers quote documents (or the model writes from them), and a document in
    a shared collection must not put a live link to a site of its author's
    choosing ("the official HR portal") into another user's answer.
    """
    return _answer_html(text, {c.n: (c.url, c.text) for c in citations}, closest)


def saved_answer_html(text: str, cited_sources: list[dict], closest: list[dict] = ()) -> str:
    """A saved turn's answer rendered now, from its text, citations and closest matches (not the HTML
    saved with it)."""
    places = {c["n"]: (c["url"], c.get("text") or "") for c in cited_sources if "n" in c and "url" in c}
    return _answer_html(text, places, closest)


# A cited source's link and its passage's text, by source number.
Places = dict[int, tuple[str, str]]


def cited_urls(text: str, cited_sources: list[dict]) -> dict[int, str]:
    """Each cited source's link as the answer's HTML gives it: with ``quote=`` where the answer quotes
    the passage (its first quoted marker), else its place. The API, MCP and the pages link alike."""
    places = {c["n"]: (c["url"], c.get("text") or "") for c in cited_sources if "n" in c and "url" in c}
    urls: dict[int, str] = {}
    for line in _lines(text):
        for marker in _SOURCE_MARKER.finditer(line):
            n, url = int(marker.group(1)), _marker_url(line, marker, places)
            if url is not None and (n not in urls or ("quote=" in url and "quote=" not in urls[n])):
                urls[n] = url
    return urls


def _lines(text: str) -> list[str]:
    """The answer's lines as its HTML reads them (bullets without their marks)."""
    return [_BULLET.sub("", line.strip()) for line in text.splitlines() if line.strip()]


def _answer_html(text: str, places: Places, closest: list[dict] = ()) -> str:
    blocks = [b for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    return "\n".join(_block_html(block, places, closest) for block in blocks)


def _block_html(block: str, places: Places, closest: list[dict] = ()) -> str:
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    if lines[0] == CLOSEST_HEADING and closest:
        return f"<p>{html.escape(CLOSEST_HEADING)}</p>" + _closest_html(lines[1:], closest)
    if all(_BULLET.match(line) for line in lines):
        items = "".join("<li>" + _inline_html(_BULLET.sub("", line), places) + "</li>" for line in lines)
        return f"<ul>{items}</ul>"
    return "<p>" + "<br>".join(_inline_html(line, places) for line in lines) + "</p>"


def _closest_html(lines: list[str], closest: list[dict]) -> str:
    """A refusal's closest matches, each line's "document, place" a link to its place (the side panel
    opens it like a citation); the excerpt stays text."""
    items = []
    for line, place in zip(lines, closest, strict=False):
        named, colon, excerpt = _BULLET.sub("", line).partition(": ")
        link = (
            f'<a class="closest-match" href="{html.escape(place["url"], quote=True)}">'
            f"{html.escape(named)}</a>"
        )
        items.append(f"<li>{link}{html.escape(colon)}{inline_html(excerpt)}</li>")
    rest = lines[len(closest) :]
    items += [f"<li>{inline_html(_BULLET.sub('', line))}</li>" for line in rest]
    return f"<ul>{''.join(items)}</ul>"


def _inline_html(line: str, places: Places) -> str:
    """The line's inline Markdown as styled text (knowledge.text.inline_markdown: a link shows its
    address, never becomes one), its [Source N] markers as links to the cited places."""
    # The markers keep their text through the parse, so the i-th marker of the line is the i-th of
    # its pieces; a marker inside a code span is code, and not linked.
    hrefs = iter([_marker_url(line, match, places) for match in _SOURCE_MARKER.finditer(line)])
    parts = []
    for piece, styles in inline_segments(line):
        escaped = html.escape(piece, quote=True)
        if "code" in styles:
            for _ in _SOURCE_MARKER.finditer(piece):
                next(hrefs)
        else:
            escaped = _SOURCE_MARKER.sub(lambda match: _chip(match, next(hrefs)), escaped)
        parts.append(styled_html(escaped, styles))
    return "".join(parts)


def _chip(marker: re.Match, href: str | None) -> str:
    n = int(marker.group(1))
    if href is None:
        return marker.group(0)
    return f'<a class="citation" href="{html.escape(href, quote=True)}" data-source="{n}">[Source {n}]</a>'


def _marker_url(line: str, marker: re.Match, places: Places) -> str | None:
    """The marker's link: its source's place, with where the sentence quoted just before it lies."""
    if int(marker.group(1)) not in places:
        return None
    url, passage = places[int(marker.group(1))]
    quoted = _QUOTED_BEFORE.search(line, 0, marker.start())
    span = quote_span(quoted.group(1), passage) if quoted else None
    return quoted_url(url, span) if span else url


def quoted_url(url: str, span: tuple[int, int]) -> str:
    """``url`` with ``quote=START-END`` (offsets in the cited chunk) before its fragment."""
    place, hash_sign, fragment = url.partition("#")
    joiner = "&" if "?" in place else "?"
    return f"{place}{joiner}quote={quote_range_format(span)}{hash_sign}{fragment}"
