"""Sentences of a chunk's text, as quotes are made of them: whole, verbatim, and worth quoting.

Shared by the extractive answer (knowledge.synthesis.extractive), the extracted document summary,
the follow-up rewriter and the retrieval's yardstick of a typical answer
(knowledge.retrieval.typical), so every one of them reads a passage's sentences the same way.
Captions, footnotes, references and page furniture are not sentences worth quoting (NOT_ANSWER).
"""

from __future__ import annotations

import re

from knowledge.text.words import CJK_RUN

MIN_CHARS, MAX_CHARS, MIN_WORDS = 25, 600, 5

# Not answers: figure and table captions, footnotes, citations of references, page furniture.
NOT_ANSWER = re.compile(
    r"^(?:fig(?:ure)?\.?|table|source|photo|image|credit)\s*\d*[.:]"
    r"|^\[?\d{1,3}\]?\s*(?:\^|↑)"
    r"|^\^"
    r"|wikimedia commons|wikiquote|wiktionary|wikisource|has media related to"
    r"|retrieved (?:on |from )?(?:\d|[a-z]+ \d)|archived from the original"
    r"|^(?:see also|main article|further information|external links|jump to|edit links)\b"
    r"|\bet al\.,? \(?\d{4}|\barxiv\b|\bdoi:|\bisbn\b|\bpp\. \d",
    re.IGNORECASE,
)
# A sentence ends at . ! or ? with any closing quotes, brackets and footnote marks ("1965.[1]"),
# before white space and a capital, a digit or Hangul (Korean spaces its sentences); or at the
# full stops of Japanese and Chinese (。！？), which need no space after them (that text has none).
_SENTENCE_END = re.compile(
    r"[.!?]+[\"'”’)\]]*(?:\[\d+\])*(?=\s+[\"'“‘(\[]?[A-Z0-9\uac00-\ud7af])"
    r"|[。！？]+[」』）)\]\"”’]*(?:\[\d+\])*"
)
_ENDS_SENTENCE = re.compile(r"[.!?。！？][\"'”’)\]」』）]*(?:\[\d+\])*$")
# A character of text written without spaces counts for half a word and two characters of
# English (a sentence of 13 kana and kanji is as long as the shortest English one quoted).
_WIDE = re.compile(CJK_RUN.pattern.replace("]+", "]"))
# A full sentence that ends in a colon introduces an example or a list ("... because joins are
# used instead of subqueries:"); documentation states many of its answers that way.
_INTRODUCES_EXAMPLE = re.compile(r"^(?:\S+\s+){7,}\S*:$")
# An item of a list: a bullet ("-", "*", "+", "•") or an enumerator ("1.", "2)", "a.") and its text.
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)]|[a-z][.)])\s+\S")
# What a quoted list may add to the sentence that introduces it: whole items, at most this much.
MAX_LIST_ITEMS, MAX_LIST_CHARS = 8, 400
_ABBREVIATION = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|vs|etc|al|e\.g|i\.e|Fig|No|Vol|approx|[A-Z])\.$", re.IGNORECASE
)


def split_sentences(text: str) -> list[str]:
    """Whole sentences of a chunk, each a verbatim run of it (whitespace collapsed)."""
    sentences: list[str] = []
    for paragraph in _paragraphs(text):
        for unit in paragraph_units(paragraph):
            sentences += _split_unit(unit)
    return [s for s in sentences if _is_quotable(s)]


def introduces_list(sentence: str) -> bool:
    return sentence.endswith(":")


def list_after(sentence: str, text: str) -> str:
    """The list items that follow ``sentence`` (a whitespace-collapsed run of ``text``) in ``text``,
    whitespace collapsed: whole items, at most MAX_LIST_ITEMS and MAX_LIST_CHARS; "" when none.

    A sentence that ends in a colon announces what follows ("... features pdfplumber does not
    provide:"); quoted without its items it says nothing.
    """
    end = _end_of(sentence, text) if introduces_list(sentence) else None
    if end is None:
        return ""
    items: list[str] = []
    for line in text[end:].splitlines():
        if not line.strip():
            continue  # blank lines separate the items of a loose list, and the list from its sentence
        if _LIST_ITEM.match(line):
            items.append(" ".join(line.split()))
        elif items and line[:1].isspace():
            items[-1] += " " + " ".join(line.split())  # an item's indented continuation line
        else:
            break
    return " ".join(_bounded(items))


def _end_of(sentence: str, text: str) -> int | None:
    match = re.search(r"\s+".join(map(re.escape, sentence.split())), text)
    return match.end() if match else None


def _bounded(items: list[str]) -> list[str]:
    kept, size = [], 0
    for item in items[:MAX_LIST_ITEMS]:
        size += len(item) + 1
        if size > MAX_LIST_CHARS:
            break
        kept.append(item)
    return kept


def _paragraphs(text: str) -> list[str]:
    """The text's paragraphs; a blank line inside a sentence is a wrap, not a paragraph's end.

    Text taken from PDFs (OCR'd pages above all) breaks lines mid-sentence with blank lines:
    "filled with balls packed" / "with saw-dust." would otherwise become two fragments, neither
    quotable, and the sentence that answers would be lost.
    """
    paragraphs: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        wraps = paragraphs and paragraph[:1].islower() and not _ENDS_SENTENCE.search(paragraphs[-1].rstrip())
        if wraps:
            paragraphs[-1] = f"{paragraphs[-1].rstrip()} {paragraph}"
        else:
            paragraphs.append(paragraph)
    return paragraphs


def _split_unit(unit: str) -> list[str]:
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(unit):
        if _ABBREVIATION.search(unit, 0, match.end()):
            continue
        pieces.append(unit[start : match.end()].strip())
        start = match.end()
    pieces.append(unit[start:].strip())
    return [p for p in pieces if p]


def paragraph_units(paragraph: str) -> list[str]:
    lines = [" ".join(line.split()) for line in paragraph.splitlines() if line.strip()]
    if not lines:
        return []
    # Many short lines are rows or list items, not one sentence wrapped over several lines.
    if len(lines) > 2 and sum(map(len, lines)) / len(lines) < 40:
        return lines
    return [" ".join(lines)]


def _is_quotable(sentence: str) -> bool:
    wide = len(_WIDE.findall(sentence))
    words = len(sentence.split()) + wide // 2
    if not (MIN_CHARS <= len(sentence) + wide <= MAX_CHARS and words >= MIN_WORDS):
        return False
    if sentence[0].islower():
        return False  # the tail of a sentence cut at the chunk's start
    if not (_ENDS_SENTENCE.search(sentence) or _INTRODUCES_EXAMPLE.search(sentence)):
        return False  # a heading, a table row, or a sentence cut at the chunk's end
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.5 * len(sentence) and not NOT_ANSWER.search(sentence)
