"""The answer without a language model: the best sentences of the sources, quoted verbatim.

Each retrieved chunk is split into sentences; captions, footnotes,
references, navigation and boilerplate are never quoted. Each sentence is
scored against the question with the embedding model (cosine of unit vectors),
plus a little word overlap, the retrieval rank of its chunk (which outweighs
the rest: the best chunk's best sentence leads), and the kind of answer the
question asks for (a number for "how many", a date for "when", a definition
for "what is"). The best few are quoted best first, each with its
[Source N]. Nothing is written that is not in a source: a quote is the chunk's
own text with only its line breaks and runs of spaces collapsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from knowledge.clients.embedding import embed_short_texts
from knowledge.clients.text import CJK_RUN
from knowledge.clients.text import snowball_terms as _terms
from knowledge.synthesis.citations import Citation, citation_for

LABEL_NO_LLM = "Extracted from your documents (no language model configured):"
LABEL_LLM_FAILED = "Extracted from your documents (the language model was unavailable):"
LABEL_BUDGET = "Extracted from your documents (the answer's time or token budget was spent):"
LABEL_UNSUPPORTED = (
    "Extracted from your documents (the language model's answer made claims its sources do not support):"
)
MAX_SOURCES = 5
MAX_SENTENCES = 4
MIN_SENTENCES = 2
MIN_CHARS, MAX_CHARS, MIN_WORDS = 25, 600, 5
# Sentences that score this far below the best are not worth quoting.
KEEP_WITHIN = 0.12
# The question's own words (Snowball-stemmed) in the sentence.
LEXICAL_WEIGHT = 0.3
# The retrieval ranked whole chunks with their context (its first chunk is the gold one for 85% of
# the paraphrased questions); a sentence alone is a weaker judge, so the rank outweighs a sentence's
# similarity: the answer leads with the best sentence of the best chunk that has one. Measured on both
# question sets, first_quote_hit_rate / citation_hit_rate: weight 0.2 paraphrased 0.667 / 0.778,
# development 0.737 / 0.789; 0.5 0.711 / 0.800, 0.763 / 0.803; 1.5 0.800 / 0.822, 0.763 / 0.789.
RANK_WEIGHT = 1.5
# Choosing between whole records, or between a sentence-less opening and a sentence, the text
# decides and the rank only a little (a record or a glossary is not answered by its place).
OPENING_RANK_WEIGHT = 0.2
# A sentence holding the kind of answer the question asks for (a number, a date, a definition).
ANSWER_TYPE_WEIGHT = 0.08

# Not answers: figure and table captions, footnotes, citations of references, page furniture.
_NOT_ANSWER = re.compile(
    r"^(?:fig(?:ure)?\.?|table|source|photo|image|credit)\s*\d*[.:]"
    r"|^\[?\d{1,3}\]?\s*(?:\^|↑)"
    r"|^\^"
    r"|wikimedia commons|wikiquote|wiktionary|wikisource|has media related to"
    r"|retrieved (?:on |from )?(?:\d|[a-z]+ \d)|archived from the original"
    r"|^(?:see also|main article|further information|external links|jump to|edit links)\b"
    r"|\bet al\.,? \(?\d{4}|\barxiv\b|\bdoi:|\bisbn\b|\bpp\. \d",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
_DATE = re.compile(
    r"\b(?:1[5-9]\d\d|20\d\d)\b|\b(?:january|february|march|april|may|june|july|august|september"
    r"|october|november|december)\b",
    re.IGNORECASE,
)
_DEFINITION = re.compile(r"\b(?:is|are|was|means|refers to|consists of|is defined as)\b", re.IGNORECASE)
_ASKS_NUMBER = re.compile(
    r"\bhow (?:many|much|long|large|big|old|often)\b|\bwhat (?:percentage|share|number)\b", re.IGNORECASE
)
_ASKS_DATE = re.compile(
    r"\bwhen\b|\bwhat (?:year|date|day|month)\b|\bwhich (?:year|date|day)\b", re.IGNORECASE
)
_ASKS_DEFINITION = re.compile(r"^\s*(?:what (?:is|are|was|were|does)|define|who (?:is|was))\b", re.IGNORECASE)

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
_ABBREVIATION = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|vs|etc|al|e\.g|i\.e|Fig|No|Vol|approx|[A-Z])\.$", re.IGNORECASE
)


@dataclass(frozen=True)
class Sentence:
    text: str
    source_number: int
    position: int
    rank: int  # the source's place in the context, 0 = best


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    citations: list[Citation]
    sentences: list[Sentence]


def extractive_answer(
    *, question: str, sources: list, label: str = LABEL_NO_LLM, cover_documents: bool = False
) -> ExtractiveAnswer:
    """Quote the sentences of ``sources`` (RetrievedChunks in [Source N] order) that best answer.

    ``cover_documents`` (multi-hop questions) first takes the best sentence of
    each source document, so every part of the question found is quoted.
    """
    top = [s for s in sources if s.source_number][:MAX_SOURCES]
    # A reference list, a footnotes page or a bibliography answers nothing, whatever its rank; the
    # others keep their rank (leaving one out promotes nothing).
    ranked = [(rank, s) for rank, s in enumerate(top) if not is_reference_list(s.chunk.content)]
    content = [s for _, s in ranked]
    candidates = [
        Sentence(text, s.source_number, position, rank)
        for rank, s in ranked
        for position, text in enumerate(split_sentences(s.chunk.content))
    ]
    documents = {s.source_number: s.chunk.document_id for s in content} if cover_documents else None
    chosen = _choose(question, candidates, documents) if candidates else []
    if not chosen and content and content[0].chunk.source_ref.startswith("sheet="):
        # Spreadsheet rows only: the rows that best match the question, not the chunks' first rows.
        chosen = _best_records(question, ranked)[:MIN_SENTENCES]
    elif not chosen:
        # Nothing sentence-shaped (a table, a list of names): quote each source's opening.
        chosen = [Sentence(_opening(s.chunk.content), s.source_number, 0, r) for r, s in enumerate(top[:2])]
    elif not cover_documents and content and _is_structured(content[0]):
        # The best source is a spreadsheet, an API operation or a schema: the record itself is the
        # answer, so the most relevant record among the structured sources leads.
        chosen = [_best_opening(question, ranked)] + chosen
        chosen = chosen[:MAX_SENTENCES]
    elif not cover_documents and content and not split_sentences(content[0].chunk.content):
        # The best source holds no sentence (a title page's authors, a status page's table, a
        # glossary): its opening leads only if it matches the question at least as well.
        opening = Sentence(_opening(content[0].chunk.content), content[0].source_number, 0, ranked[0][0])
        plain = _scores(
            question, [opening, chosen[0]], with_answer_type=False, rank_weight=OPENING_RANK_WEIGHT
        )
        if plain[0] >= plain[1]:
            chosen = ([opening] + chosen)[:MAX_SENTENCES]
    by_number = {s.source_number: s for s in top}
    lines = [f'- "{s.text}" [Source {s.source_number}]' for s in chosen]
    citations = [citation_for(by_number[n]) for n in sorted({s.source_number for s in chosen})]
    return ExtractiveAnswer(label + "\n\n" + "\n".join(lines), citations, chosen)


# A record, not prose: its opening is the answer even when it holds no sentence.
_STRUCTURED_REFS = ("sheet=", "operation=", "component=")
# A chunk whose paragraphs are mostly footnotes, citations or link lists is a reference list.
REFERENCE_LIST_SHARE = 0.5


def _is_structured(source) -> bool:
    """A spreadsheet, an API operation or schema; a page or section without a sentence is a
    glossary, a contents page or a figure, not a record."""
    return source.chunk.source_ref.startswith(_STRUCTURED_REFS)


def _best_opening(question: str, ranked: list) -> Sentence:
    """The record of the structured sources that best matches the question, the better ranked on a
    tie: a spreadsheet row (a chunk holds several, one a line), or an API element's opening."""
    return _best_records(question, ranked)[0]


def _best_records(question: str, ranked: list) -> list[Sentence]:
    """The structured sources' records, best match first."""
    records = [record for rank, s in ranked if _is_structured(s) for record in _records(s, rank)]
    scores = _scores(question, records, with_answer_type=False, rank_weight=OPENING_RANK_WEIGHT)
    return [records[i] for i in np.argsort(-scores, kind="stable")]


def _records(source, rank: int) -> list[Sentence]:
    """A spreadsheet chunk's rows, each quoted whole; another record's opening."""
    if not source.chunk.source_ref.startswith("sheet="):
        return [Sentence(_opening(source.chunk.content), source.source_number, 0, rank)]
    rows = [_opening(line) for line in source.chunk.content.splitlines() if line.strip()]
    return [Sentence(row, source.source_number, position, rank) for position, row in enumerate(rows)]


def is_reference_list(text: str) -> bool:
    """Most of the chunk's lines are footnotes, citations or links: nothing in it answers."""
    units = [u for paragraph in re.split(r"\n\s*\n", text) for u in _paragraph_units(paragraph)]
    if not units:
        return False
    noise = sum(1 for unit in units if _NOT_ANSWER.search(unit))
    return noise >= REFERENCE_LIST_SHARE * len(units)


def split_sentences(text: str) -> list[str]:
    """Whole sentences of a chunk, each a verbatim run of it (whitespace collapsed)."""
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        for unit in _paragraph_units(paragraph):
            sentences += _split_unit(unit)
    return [s for s in sentences if _is_quotable(s)]


def _split_unit(unit: str) -> list[str]:
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(unit):
        if _ABBREVIATION.search(unit, 0, match.end()):
            continue
        pieces.append(unit[start : match.end()].strip())
        start = match.end()
    pieces.append(unit[start:].strip())
    return [p for p in pieces if p]


def _paragraph_units(paragraph: str) -> list[str]:
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
    return letters >= 0.5 * len(sentence) and not _NOT_ANSWER.search(sentence)


def _choose(question: str, candidates: list[Sentence], documents: dict | None = None) -> list[Sentence]:
    """The best sentences; with ``documents`` (source number -> document), each document's best first."""
    scores = _scores(question, candidates)
    order = np.argsort(-scores, kind="stable")
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


def _scores(
    question: str,
    candidates: list[Sentence],
    *,
    with_answer_type: bool = True,
    rank_weight: float = RANK_WEIGHT,
) -> np.ndarray:
    # Short texts on onnxruntime (same vectors as torch): a web process needs no torch model for this.
    vectors = embed_short_texts([question] + [c.text for c in candidates])
    cosine = vectors[1:] @ vectors[0]
    terms = _terms(question)
    overlap = np.array([len(terms & _terms(c.text)) / len(terms) if terms else 0.0 for c in candidates])
    rank = np.array([1.0 - c.rank / MAX_SOURCES for c in candidates])
    scores = cosine + LEXICAL_WEIGHT * overlap + rank_weight * rank
    if with_answer_type:
        scores += ANSWER_TYPE_WEIGHT * np.array([answer_type_match(question, c.text) for c in candidates])
    return scores


def answer_type_match(question: str, sentence: str) -> float:
    """1.0 when the sentence holds what the question asks for: a number, a date or a definition."""
    if _ASKS_NUMBER.search(question):
        return 1.0 if _NUMBER.search(sentence) else 0.0
    if _ASKS_DATE.search(question):
        return 1.0 if _DATE.search(sentence) else 0.0
    if _ASKS_DEFINITION.search(question):
        return 1.0 if _DEFINITION.search(sentence) else 0.0
    return 0.0


def _opening(text: str, limit: int = 300) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) <= limit:
        return collapsed
    return collapsed[:limit].rsplit(" ", 1)[0]


def normalise(text: str) -> str:
    """Whitespace-collapsed text, for checking that a quote is in its source."""
    return " ".join(text.split())
