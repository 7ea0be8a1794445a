"""Plain text and reStructuredText: sections under underlined or capitalised titles (``section=NAME``)."""

from __future__ import annotations

import re

from knowledge.ingestion.formats.common import HeadingSections, decode_text, filename_stem
from knowledge.ingestion.limits import TextBudget, text_size_check
from knowledge.ingestion.types import Section

_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}[ \t]*$")
_RST_INLINE = (
    # :role:`text <target>`
    (re.compile(r":[\w:+.-]+:`([^`<]*?)\s*(?:<[^>]*>)?`"), lambda m: _rst_role_text(m[1])),
    (re.compile(r"`([^`<]*?)\s*(?:<[^>]*>)?`__?"), r"\1"),  # `link <url>`_
    (re.compile(r"``(.+?)``"), r"\1"),  # ``literal``
    (re.compile(r"\*\*(.+?)\*\*|\*(.+?)\*"), r"\1\2"),  # **strong**, *em*
)


def extract_text(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Plain text, cut at section titles when it has recognisable ones.

    The rule, in order:

    1. reStructuredText titles: a non-indented line after a blank line (or
       an overline), directly underlined by one repeated punctuation
       character at least as long as the title (``Title`` / ``=====``). Levels
       follow the order in which adornment styles first appear, as in docutils.
    2. Otherwise ALL-CAPS title lines: a line of at most 80 characters alone
       between blank lines, with at least three capital letters, no lowercase
       letters and no trailing ``.``/``,``/``;``.
    3. Otherwise one section named after the file.

    Each section's ref is ``section=TITLE``; text before the first title goes
    under the filename stem. Title lines and their adornments are removed;
    inline markup (roles, literals, links) is stripped from rST titles.
    """
    text = decode_text(data)
    text_size_check(text, budget.limits)
    lines = text.splitlines()
    builder = HeadingSections(filename_stem(filename), budget, key="section")
    titles = _rst_titles(lines) or _caps_titles(lines)
    adornments = set().union(*(used for _, _, used in titles.values()))
    body: list[str] = []
    for index, line in enumerate(lines):
        if index in titles:
            builder.add("\n".join(body))
            body = []
            level, title, _ = titles[index]
            builder.heading(level, title)
        elif index not in adornments:
            body.append(line)
    builder.add("\n".join(body))
    return builder.finish()


def _rst_titles(lines: list[str]) -> dict[int, tuple[int, str, set[int]]]:
    """Map line index -> (level, title, indexes of its adornment lines)."""
    styles: list[tuple[str, bool]] = []
    titles: dict[int, tuple[int, str, set[int]]] = {}
    index = 0
    while index < len(lines) - 1:
        line, below = lines[index], lines[index + 1]
        above = lines[index - 1] if index > 0 else ""
        over = _RST_ADORNMENT.match(above)
        under = _RST_ADORNMENT.match(below)
        title = line.strip()
        is_title = (
            under is not None
            and title
            and not _RST_ADORNMENT.match(line)
            and len(below.rstrip()) >= len(title)
            and (over is not None or (not above.strip() and not line[:1].isspace()))
        )
        if is_title:
            overlined = over is not None and over.group(1) == under.group(1)
            style = (under.group(1), overlined)
            if style not in styles:
                styles.append(style)
            used = {index + 1} | ({index - 1} if overlined else set())
            titles[index] = (styles.index(style) + 1, _strip_inline_rst(title), used)
            index += 2
        else:
            index += 1
    return titles


def _strip_inline_rst(text: str) -> str:
    """``:mod:`django.contrib.gis``` -> ``django.contrib.gis`` for readable source_refs."""
    for pattern, replacement in _RST_INLINE:
        text = pattern.sub(replacement, text)
    return text


def _rst_role_text(target: str) -> str:
    """Sphinx shows ``:meth:`~a.b.c``` as ``c``."""
    return target[1:].rsplit(".", 1)[-1] if target.startswith("~") else target


def _caps_titles(lines: list[str]) -> dict[int, tuple[int, str, set[int]]]:
    titles = {}
    for index, line in enumerate(lines):
        title = line.strip()
        above = lines[index - 1] if index > 0 else ""
        below = lines[index + 1] if index + 1 < len(lines) else ""
        if (
            title
            and len(title) <= 80
            and not above.strip()
            and not below.strip()
            and sum(c.isupper() for c in title) >= 3
            and not any(c.islower() for c in title)
            and not title.endswith((".", ",", ";"))
        ):
            titles[index] = (1, title, set())
    return titles
