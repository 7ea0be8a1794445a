"""A line's inline Markdown (code spans, emphasis, strikethrough, links) read as styled text.

Answers and quotes of Markdown documents carry their syntax ("`manage.py migrate`", "**not**",
"[the guide](https://…)"). People should read the text, not the marks. The line is parsed with
markdown-it's CommonMark inline rules and nothing else: raw HTML stays text, and a link becomes
its text followed by its address in brackets, never a live link (a document in a shared collection
must not put a link of its author's choosing into another user's page).
"""

from __future__ import annotations

import html
import re
from functools import cache

STYLE_TAGS = {"code": "code", "strong": "strong", "em": "em", "del": "del"}
_OPENING = {"strong_open": "strong", "em_open": "em", "s_open": "del"}
_CLOSING = {"strong_close", "em_close", "s_close"}
# A line's block marks: quote marks ("> "), a heading's hashes, a list item's bullet or number.
_BLOCK_MARKS = re.compile(
    r"^[ \t]{0,3}(?:(?:>[ \t]?)+|#{1,6}[ \t]+|(?:[-*+]|\d{1,9}[.)])[ \t]+)", re.MULTILINE
)


@cache
def _parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("zero").enable(["backticks", "emphasis", "link", "autolink", "escape", "strikethrough"])


def inline_segments(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The line as (text, styles) pieces in order; styles are the enclosing ``code``, ``strong``,
    ``em`` and ``del``, outermost first."""
    if not text:
        return []
    tokens = _parser().parseInline(text)[0].children or []
    segments: list[tuple[str, tuple[str, ...]]] = []
    styles: list[str] = []
    links: list[str] = []
    for token in tokens:
        if token.type in _OPENING:
            styles.append(_OPENING[token.type])
        elif token.type in _CLOSING and styles:
            styles.pop()
        elif token.type == "code_inline":
            segments.append((token.content, (*styles, "code")))
        elif token.type == "link_open":
            links.append(str(token.attrs.get("href", "")))
        elif token.type == "link_close" and links:
            address = links.pop()
            if address.startswith(("http://", "https://")):
                segments.append((f" ({address})", tuple(styles)))
        elif token.type in ("softbreak", "hardbreak"):
            segments.append((" ", tuple(styles)))
        elif token.content:
            segments.append((token.content, tuple(styles)))
    return _joined(segments)


def inline_plain(text: str) -> str:
    """The line's text without its Markdown marks."""
    return "".join(piece for piece, _ in inline_segments(text))


def block_marks_removed(text: str) -> str:
    """The text without the block marks that open its lines (quote marks, heading hashes, bullets),
    for an excerpt that runs its lines together."""
    return _BLOCK_MARKS.sub("", text)


def inline_html(text: str) -> str:
    """The line as safe HTML: its text escaped, its styles as ``<code>``, ``<strong>``, ``<em>`` and
    ``<del>``; no links."""
    return "".join(
        styled_html(html.escape(piece, quote=True), styles) for piece, styles in inline_segments(text)
    )


def styled_html(escaped: str, styles: tuple[str, ...]) -> str:
    """Already escaped text inside its style tags, outermost first."""
    for style in reversed(styles):
        tag = STYLE_TAGS[style]
        escaped = f"<{tag}>{escaped}</{tag}>"
    return escaped


def _joined(segments: list[tuple[str, tuple[str, ...]]]) -> list[tuple[str, tuple[str, ...]]]:
    joined: list[tuple[str, tuple[str, ...]]] = []
    for piece, styles in segments:
        if joined and joined[-1][1] == styles:
            joined[-1] = (joined[-1][0] + piece, styles)
        else:
            joined.append((piece, styles))
    return joined
