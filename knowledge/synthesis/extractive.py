"""The answer without a language model: the units of the sources that best answer, quoted verbatim.

Each retrieved chunk is cut into quotable units: sentences of prose; the rows of
a spreadsheet or CSV, or of a table read from a PDF (each row already carries its
column headers; a PDF table's is shown with its caption); the rows of a table
flattened into a PDF page's text where no table was found ("PaSa-7b 0.7071 ...
0.5798", shown with its column line and caption); the record of an API operation or schema; the opening
of a chunk with none of these. Captions, footnotes, references, navigation and
boilerplate are never quoted, and neither is anything from a passage under the
relevance floor (``QUOTE_FLOOR``) or a unit that shares nothing with the
question (no word of it and little meaning).

Each unit of every top passage is scored by how well it answers: the embedding
model's cosine, the question's content words weighted by their rarity among the
candidates, and the form of answer the question asks for beside those words
(knowledge.synthesis.answer_cues: a duration for "how long", an amount for "how
many", a date for "when", a name for "who", the defining sentence for "what is",
a consequence for "what happens if", the stated contribution for "what does X
propose"). The retrieval's order still counts (RANK_STEP a place): a later
passage leads only when its unit answers clearly better. A sentence that
introduces a list is quoted with the list's items. Units are quoted best first,
each with its [Source N]. Nothing is written that is not in a source: a quote is
the chunk's own text with only its line breaks and runs of spaces collapsed. With
nothing worth quoting the answer has no quotes, and the caller refuses
(knowledge.synthesis.refusal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from knowledge.clients.embedding import embed_sentences
from knowledge.retrieval.answerability import QUOTE_FLOOR
from knowledge.synthesis.answer_cues import (
    ELSEWHERE,
    answer_cue,
    answer_type_match,
    rarity_overlap,
    rarity_weights,
    table_row_cue,
)
from knowledge.synthesis.citations import Citation, citation_for
from knowledge.text.sentences import (
    MIN_CHARS,
    NOT_ANSWER,
    list_after,
    paragraph_units,
    split_sentences,
)

__all__ = [
    "answer_type_match",
    "extractive_answer",
    "is_reference_list",
    "normalise",
    "says_nothing",
    "split_sentences",
]

# The words every page uses for an answer made of quotes (templates/knowledge/chat.html, chat.js);
# why there was no written answer is said only when something failed.
LABEL_NO_LLM = "Quoted from your documents:"
LABEL_LLM_FAILED = "Quoted from your documents (the language model was unavailable):"
LABEL_BUDGET = "Quoted from your documents (the answer's time or token budget was spent):"
LABEL_UNSUPPORTED = (
    "Quoted from your documents (the language model's answer made claims its sources do not support):"
)
MAX_SOURCES = 5
MAX_SENTENCES = 4
MIN_SENTENCES = 2
# Units that score this far below the best are not worth quoting.
KEEP_WITHIN = 0.12
# How well a unit answers: its cosine to the question (weight 1), the question's content words
# weighted by their rarity among the candidates, and the form of answer asked for
# (knowledge.synthesis.answer_cues: a duration beside the question's words, a date, a name ...).
LEXICAL_WEIGHT = 0.5
CUE_WEIGHT = 0.3
# The retrieval's order still counts: each place further down the passages costs a unit this much of
# its answer score, so a later passage leads only when its unit answers clearly better. One place is
# worth as much as holding the answer's form beside the question's words rather than elsewhere.
RANK_STEP = CUE_WEIGHT * (1 - ELSEWHERE)
# A unit with none of the question's words and a cosine under this shares nothing with it.
CONTENT_COSINE = 0.15
# What a place costs when an opening without sentences is weighed against prose (see _opening_first).
OPENING_RANK_STEP = 0.06
# A chunk this early in its document is its opening (abstract, introduction, lead).
OPENING_CHUNKS = 3


# A row of a table flattened out of a PDF: a label, then at least three numbers or dashes.
_TABLE_ROW = re.compile(
    r"(?P<label>[A-Za-z][\w@.()\-]*(?: [A-Za-z][\w@.()\-]*){0,3})"
    r"(?P<values>(?: (?:-|\d+(?:\.\d+)?%?)){3,})(?=\s|$)"
)
_TABLE_CAPTION = re.compile(r"\bTable \d+[.:][^\n]*?[.](?=\s|$)")
# A record, not prose: its opening is the answer even when it holds no sentence.
_RECORD_REFS = ("operation=", "component=")
_SHEET_REF = "sheet="
_RECORD_KINDS = ("record", "row")
# A chunk whose paragraphs are mostly footnotes, citations or link lists is a reference list.
REFERENCE_LIST_SHARE = 0.5


@dataclass(frozen=True)
class Sentence:
    text: str
    source_number: int
    position: int
    rank: int  # the source's place in the context, 0 = best
    kind: str = "sentence"  # or "row", "table", "record", "opening"
    note: str = ""  # what a table row needs to be read: its column line and caption, verbatim
    opening: bool = False  # from the first chunks of its document


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    citations: list[Citation]
    sentences: list[Sentence]
    # What its [Source N] number, in order: the sources given, then the continuations it quotes.
    passages: list


def extractive_answer(
    *, question: str, sources: list, label: str = LABEL_NO_LLM, cover_documents: bool = False
) -> ExtractiveAnswer:
    """Quote the units of ``sources`` (RetrievedChunks in [Source N] order) that best answer.

    ``cover_documents`` (multi-hop questions) first takes the best unit of
    each source document, so every part of the question found is quoted. No
    quotable unit: an answer with no sentences (the caller refuses).
    """
    top = _top_sources(sources)
    ranked = [(rank, s) for rank, s in _ranks(top) if _quotable_source(s)]
    candidates = [unit for rank, s in ranked for unit in units_of(s, rank)]
    documents = {s.source_number: s.chunk.document_id for _, s in ranked} if cover_documents else None
    chosen = _choose(question, candidates, documents) if candidates else []
    passages, chosen = _numbered_after_sources(sources, chosen)
    by_number = {s.source_number: s for s in passages}
    lines = [_quote_line(s) for s in chosen]
    citations = [citation_for(by_number[n]) for n in sorted({s.source_number for s in chosen})]
    text = label + "\n\n" + "\n".join(lines) if lines else ""
    return ExtractiveAnswer(text, citations, chosen, passages)


def _numbered_after_sources(sources: list, chosen: list[Sentence]) -> tuple[list, list[Sentence]]:
    """The passages the answer's [Source N] name, and its units numbered by them.

    The sources keep their numbers: they are the list shown beside the answer. A continuation is
    listed only when a unit of it is quoted, numbered after the sources in the order given, so that
    [Source N] is always the N-th listed passage, with no gap for the continuations left unquoted.
    """
    own = [s for s in sources if s.source_number and s.role != "continuation"]
    quoted = {unit.source_number for unit in chosen}
    following = [s for s in sources if s.role == "continuation" and s.source_number in quoted]
    last = max((s.source_number for s in own), default=0)
    numbers = {s.source_number: last + i for i, s in enumerate(following, start=1)}
    passages = own + [replace(s, source_number=numbers[s.source_number]) for s in following]
    units = [
        replace(unit, source_number=numbers.get(unit.source_number, unit.source_number)) for unit in chosen
    ]
    return passages, units


def _top_sources(sources: list) -> list:
    """The best MAX_SOURCES sources, and what continues them (knowledge.retrieval.continuation)."""
    numbered = [s for s in sources if s.source_number]
    own = [s for s in numbered if s.role != "continuation"][:MAX_SOURCES]
    kept = {s.source_number for s in own}
    return own + [s for s in numbered if s.role == "continuation" and s.scores.get("continues") in kept]


def _ranks(top: list) -> list[tuple[int, object]]:
    """Each source's rank; a continuation takes the rank of the passage it continues."""
    rank_of = {}
    ranked = []
    for source in top:
        if source.role == "continuation":
            rank = rank_of[source.scores["continues"]]
        else:
            rank = rank_of[source.source_number] = len(rank_of)
        ranked.append((rank, source))
    return ranked


def says_nothing(chunk) -> bool:
    """A chunk of prose without one quotable sentence: a title block, a lone heading, a caption."""
    if chunk.source_ref.startswith(_RECORD_REFS + (_SHEET_REF,)):
        return False
    return not split_sentences(chunk.content) and not table_rows(chunk.content)


def _quote_line(unit: Sentence) -> str:
    line = f'- "{unit.text}" [Source {unit.source_number}]'
    return line + f"\n  ({unit.note})" if unit.note else line


def _quotable_source(source) -> bool:
    """A reference list answers nothing whatever its rank, nor a passage under the relevance floor.

    The floor is the cosine's, unless the lexical search ranked the passage first (it holds the
    question's rarest words best: a row of Japanese cells found by its date, at cosine 0.18). A
    reference or continuation a primary chunk pulled in has no score of its own and is kept.
    """
    scores = source.scores or {}
    similarity = scores.get("similarity")
    if similarity is not None and similarity < QUOTE_FLOOR and scores.get("lexical_rank") != 1:
        return False
    # A table's rows are answers, though its caption line reads like a figure's (NOT_ANSWER).
    return bool((source.chunk.metadata or {}).get("table")) or not is_reference_list(source.chunk.content)


def units_of(source, rank: int) -> list[Sentence]:
    """The quotable units of one retrieved chunk (see the module docstring)."""
    ref, content, number = source.chunk.source_ref, source.chunk.content, source.source_number
    opening = (getattr(source.chunk, "index", None) or 0) < OPENING_CHUNKS
    if ref.startswith(_SHEET_REF):
        rows = [line for line in _lines(content) if len(line) >= MIN_CHARS]
        return [Sentence(row, number, i, rank, "row") for i, row in enumerate(rows)]
    caption = (source.chunk.metadata or {}).get("table")
    if caption:  # a table read from a PDF: its chunks start with the caption, then a row per line
        rows = [line for line in _lines(content) if line != caption and len(line) >= MIN_CHARS]
        return [Sentence(row, number, i, rank, "table", f'"{caption}"') for i, row in enumerate(rows)]
    if ref.startswith(_RECORD_REFS):
        return [Sentence(_opening(content), number, 0, rank, "record")]
    units = [
        Sentence(_with_list(text, content), number, i, rank, opening=opening)
        for i, text in enumerate(split_sentences(content))
    ]
    units += [
        Sentence(row, number, 1000 + i, rank, "table", note)
        for i, (row, note) in enumerate(table_rows(content))
    ]
    if not units and content.strip():
        units = [Sentence(_opening(content), number, 0, rank, "opening", opening=opening)]
    return units


def _with_list(sentence: str, content: str) -> str:
    """A sentence that introduces a list is quoted, and weighed, with the list's items."""
    items = list_after(sentence, content)
    return f"{sentence} {items}" if items else sentence


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def table_rows(text: str) -> list[tuple[str, str]]:
    """Rows of the tables flattened into a chunk's text, each with its column line and caption.

    A PDF table comes out as one run of labels and numbers ended by its caption
    ("Table 6: Results on ..."); the column line is the run's opening words.
    """
    flat = " ".join(text.split())
    rows, start = [], 0
    for caption in _TABLE_CAPTION.finditer(flat):
        block = flat[start : caption.start()]
        start = caption.end()
        matches = list(_TABLE_ROW.finditer(block))
        if len(matches) < 2:
            continue
        # The column line runs into the first row's label: both stay in it, verbatim.
        columns = block[: matches[0].end("label")].strip()[-200:].split(". ")[-1]
        note = f'columns: "{columns}"; "{caption.group(0)}"'
        rows += [(m.group(0).strip(), note) for m in matches]
    return rows


def is_reference_list(text: str) -> bool:
    """Most of the chunk's lines are footnotes, citations or links: nothing in it answers."""
    units = [u for paragraph in re.split(r"\n\s*\n", text) for u in paragraph_units(paragraph)]
    if not units:
        return False
    noise = sum(1 for unit in units if NOT_ANSWER.search(unit))
    return noise >= REFERENCE_LIST_SHARE * len(units)


def _choose(question: str, candidates: list[Sentence], documents: dict | None = None) -> list[Sentence]:
    """The best units; with ``documents`` (source number -> document), each document's best first."""
    scored = _scores(question, candidates)
    scores = scored.scores
    order = [i for i in np.argsort(-scores, kind="stable") if scored.shares[i]]
    if not order:
        return []
    order = _opening_first(candidates, scored.plain, _record_first(candidates, order, scored.named))
    best = float(scores[order[0]])
    chosen, seen = [], set()
    if documents:
        covered = set()
        for index in order:
            document = documents[candidates[index].source_number]
            if document not in covered and len(chosen) < MAX_SENTENCES:
                covered.add(document)
                chosen.append(candidates[index])
                seen.add(candidates[index].text.lower())
    for index in order:
        sentence = candidates[index]
        key = sentence.text.lower()
        if len(chosen) >= MAX_SENTENCES:
            break
        if key in seen:
            continue
        if len(chosen) >= MIN_SENTENCES and float(scores[index]) < best - KEEP_WITHIN:
            break
        chosen.append(sentence)
        seen.add(key)
    return chosen


@dataclass(frozen=True)
class _Scored:
    scores: np.ndarray  # how well each unit answers, less RANK_STEP a place
    plain: np.ndarray  # the same with the rank counting for little (openings, see _opening_first)
    shares: list[bool]  # the unit shares anything with the question at all
    named: list[bool]  # the unit holds one of the question's content words


def _scores(question: str, candidates: list[Sentence]) -> _Scored:
    texts = [_scored_text(c) for c in candidates]
    # Short texts on onnxruntime (same vectors as torch): a web process needs no torch model for this;
    # a sentence quoted before is not encoded again.
    vectors = embed_sentences([question] + texts)
    cosine = vectors[1:] @ vectors[0]
    weights = rarity_weights(question, texts)
    overlap = np.array([rarity_overlap(weights, text) for text in texts])
    rank = np.array([c.rank for c in candidates])
    cue = np.array([_cue(question, c) for c in candidates])
    text_score = cosine + LEXICAL_WEIGHT * overlap
    scores = text_score + CUE_WEIGHT * cue - RANK_STEP * rank
    plain = text_score - OPENING_RANK_STEP * rank
    shares = [bool(o > 0 or c >= CONTENT_COSINE) for o, c in zip(overlap, cosine, strict=True)]
    return _Scored(scores, plain, shares, [bool(o > 0) for o in overlap])


def _record_first(candidates: list[Sentence], order: list[int], named: list[bool]) -> list[int]:
    """When the first passage is a record (an API operation or schema, a spreadsheet's rows), the
    best record holding a word of the question leads: a record is matched whole, so its cosine to a
    question is lower than a sentence's and says less about whether it answers; records are weighed
    against records."""
    if not any(c.rank == 0 and c.kind in _RECORD_KINDS for c in candidates):
        return order
    best = next((i for i in order if candidates[i].kind in _RECORD_KINDS and named[i]), None)
    return order if best is None else [best] + [i for i in order if i != best]


def _opening_first(candidates: list[Sentence], plain: np.ndarray, order: list[int]) -> list[int]:
    """An opening without a sentence (a title block, a glossary, a status table) is not answered by
    its place: it leads only if it matches at least as well as the best other unit when the rank
    counts for little (``plain``) for both."""
    if candidates[order[0]].kind != "opening":
        return order
    other = next((i for i in order if candidates[i].kind != "opening"), None)
    if other is not None and plain[other] > plain[order[0]]:
        order = [other] + [i for i in order if i != other]
    return order


def _cue(question: str, unit: Sentence) -> float:
    if unit.kind == "table":
        return table_row_cue(question, _row_label(unit.text))
    return answer_cue(question, unit.text, opening=unit.opening)


def _row_label(row: str) -> str:
    """What a table row is about: its first cell ("Method: PaSa-7b; Recall: 0.61" -> "PaSa-7b"), or
    the first word of a row flattened into a page's text ("PaSa-7b 0.7931 0.1448 ...")."""
    if _HEADED_CELL.match(row):
        return row.split("; ", 1)[0].split(": ", 1)[1]
    return row.split(" ", 1)[0]


# A row rendered with its headers starts "Header: value".
_HEADED_CELL = re.compile(r"^[^;:]{1,80}: ")


def _scored_text(unit: Sentence) -> str:
    """A table row is read with its columns and caption; every other unit as it is quoted."""
    return f"{unit.note} {unit.text}" if unit.note else unit.text


def _opening(text: str, limit: int = 300) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) <= limit:
        return collapsed
    return collapsed[:limit].rsplit(" ", 1)[0]


def normalise(text: str) -> str:
    """Whitespace-collapsed text, for checking that a quote is in its source."""
    return " ".join(text.split())
