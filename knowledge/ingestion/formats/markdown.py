"""Markdown: sections under ATX and setext headings, inline markup stripped."""

from __future__ import annotations

import re

from knowledge.ingestion.formats.common import HeadingSections, collapse, decode_text, filename_stem
from knowledge.ingestion.limits import TextBudget, text_size_check
from knowledge.ingestion.types import Section

_MD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_MD_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A line that can be a setext heading: not blank, a list item, a quote or a table row.
_MD_PARAGRAPH_LINE = re.compile(r"^ {0,3}(?![-*+>|]|\d+[.)][ \t]|\s*$)")
_MD_INLINE = (
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # [text](url), ![alt](src)
    (re.compile(r"!?\[([^\]]*)\]\[[^\]]*\]"), r"\1"),  # [text][ref]
    (re.compile(r"<(https?://[^>]+)>"), r"\1"),  # <https://autolink>
    (re.compile(r"`+([^`]*)`+"), r"\1"),  # `code`
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),  # **strong**
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*"), r"\1"),  # *em*
    (re.compile(r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)"), r"\1"),  # _em_
    (re.compile(r"~~(.+?)~~"), r"\1"),  # ~~strike~~
)


def extract_markdown(filename: str, data: bytes, budget: TextBudget) -> list[Section]:
    """Sections by ATX (``#``) and setext (underlined) headings.

    Lines inside code fences and YAML front matter are never headings. A
    setext heading is the single paragraph line right above the ``===`` /
    ``---`` underline; ``---`` after a blank line or a list item is a rule.
    """
    builder = HeadingSections(filename_stem(filename), budget)
    text = decode_text(data)
    text_size_check(text, budget.limits)
    body: list[str] = []
    fence = ""
    for number, line in enumerate(text.splitlines()):
        if fence:
            fence = "" if line.strip().startswith(fence) else fence
            body.append(line)
        elif number == 0 and line.strip() == "---":
            fence = "---"  # front matter runs to the next "---"
            body.append(line)
        elif match := _MD_FENCE.match(line):
            fence = match.group(1)
            body.append(line)
        elif match := _MD_ATX.match(line):
            builder.add("\n".join(body))
            body = []
            builder.heading(len(match.group(1)), _strip_inline_markdown(match.group(2) or ""))
        elif (match := _MD_SETEXT.match(line)) and body and _MD_PARAGRAPH_LINE.match(body[-1]):
            heading = body.pop()
            builder.add("\n".join(body))
            body = []
            level = 1 if match.group(1).startswith("=") else 2
            builder.heading(level, _strip_inline_markdown(heading))
        else:
            body.append(line)
    builder.add("\n".join(body))
    return builder.finish()


def _strip_inline_markdown(text: str) -> str:
    """``Install [Django](url) *now*`` -> ``Install Django now`` for source_refs."""
    for pattern, replacement in _MD_INLINE:
        text = pattern.sub(replacement, text)
    return collapse(text)
