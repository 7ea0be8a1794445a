"""What kind of answer a question asks for, and how well a sentence holds it (pure, no model).

A question's form says what its answer looks like: "how many" wants a quantity
of something, "when" a date, "what is X" a sentence that defines X, "what does X
propose" the statement of a contribution. Each cue is a number in [0, 1]; the
extractive synthesiser adds them, weighted, to a sentence's similarity. The cues
are general properties of the text (a number next to the counted noun, a
copula after the subject, "we introduce ..."), never phrases of particular
questions.

``rarity_overlap`` weighs the question's words by how rare they are among the
candidate sentences: a word every candidate holds ("PaSa" in a paper about
PaSa) tells them apart no more than a stop word does.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from knowledge.clients.text import snowball_terms

NUMBER = re.compile(r"\d")
QUANTITY = re.compile(r"(?<![\w@])\d[\d,.]*(?:\s?(?:k|m|bn|%|percent|million|billion|thousand))?(?![\w@])")
DATE = re.compile(
    r"\b(?:1[5-9]\d\d|20\d\d)\b|\b(?:january|february|march|april|may|june|july|august|september"
    r"|october|november|december)\b|\b\d{4}-\d\d-\d\d\b",
    re.IGNORECASE,
)
COPULA = re.compile(r"\b(?:is|are|was|were|means|refers to|consists of|is defined as|is known as)\b", re.I)
PROPOSAL = re.compile(
    r"\b(?:we|this (?:paper|work|article|study)|our (?:paper|work))\s+(?:\w+\s+){0,2}?"
    r"(?:propose|proposes|introduce|introduces|present|presents|develop|develops|describe|build)\b"
    r"|\b(?:in this (?:paper|work|article|study))\b|\bmain contributions?\b",
    re.IGNORECASE,
)

ASKS_NUMBER = re.compile(
    r"\bhow (?:many|much|long|large|big|old|often|far|fast|high)\b"
    r"|\bwhat (?:percentage|share|number|amount|total|value|score|rate|size|price|cost)\b"
    r"|^\s*what\b.*\b(?:reach|reaches|reached|achieve|achieves|achieved|score|scores|scored|cost|costs)\b",
    re.IGNORECASE,
)
ASKS_DATE = re.compile(
    r"\bwhen\b|\bwhat (?:year|date|day|month)\b|\bwhich (?:year|date|day)\b", re.IGNORECASE
)
ASKS_DEFINITION = re.compile(r"^\s*(?:what (?:is|are|was|were)|define|who (?:is|was))\b", re.IGNORECASE)
ASKS_PROPOSAL = re.compile(
    r"\b(?:propose|proposes|proposed|introduce|introduces|contribution|contributions|about)\b"
    r"|\bwhat (?:does|did) (?:the )?(?:paper|article|work|study)\b",
    re.IGNORECASE,
)
# A figure stated relative to another ("by 37.78%", "a 34.05% improvement") is not the quantity itself.
RELATIVE_FIGURE = re.compile(
    r"\bby (?:about |nearly |over )?\d[\d.,]*\s?%|\d[\d.,]*\s?% (?:improvement|increase|decrease|gain|drop|"
    r"higher|lower|more|less|better|worse)",
    re.IGNORECASE,
)
ASKS_RELATIVE = re.compile(
    r"\bby how much\b|\bimprov|\bbetter\b|\bworse\b|\bcompared?\b|\bgain\b|\bincrease|\bdecrease"
    r"|\boutperform|\bsurpass|\bhigher\b|\blower\b|\bdifference\b",
    re.IGNORECASE,
)
# "How many X are in Y" is answered by "Y includes / contains / comprises N X".
ASKS_MEMBERSHIP = re.compile(
    r"\bhow many\b.*\b(?:in|inside|within|contain|contains|include|includes|have|has)\b", re.IGNORECASE
)
MEMBERSHIP = re.compile(
    r"\b(?:include|includes|included|contain|contains|contained|comprise|comprises|comprised|consist|consists"
    r"|consisted|total|totals|in total)\b",
    re.IGNORECASE,
)
# "What does the paper propose?" is not a definition question, though it starts like one.
_WHAT_DOES = re.compile(r"^\s*what (?:does|did|do)\b", re.IGNORECASE)
# The cue of a sentence holding the wrong kind of figure (a gain or difference for a value).
WRONG_KIND = -0.5
# How many words after a number its noun may come ("35k fine-grained academic queries").
NOUN_WINDOW = 4
# How many words into a sentence a defined subject appears ("A gravity hill, also known as ...").
SUBJECT_WINDOW = 8


def question_kind(question: str) -> str:
    """ "number", "date", "proposal", "definition" or "" (no particular form)."""
    if ASKS_NUMBER.search(question):
        return "number"
    if ASKS_DATE.search(question):
        return "date"
    if ASKS_PROPOSAL.search(question) and (_WHAT_DOES.search(question) or "contribution" in question.lower()):
        return "proposal"
    if ASKS_DEFINITION.search(question):
        return "definition"
    return ""


def answer_type_match(question: str, sentence: str) -> float:
    """1.0 when the sentence holds what the question asks for: a number, a date or a definition."""
    kind = question_kind(question)
    if kind == "number":
        return 1.0 if NUMBER.search(sentence) else 0.0
    if kind == "date":
        return 1.0 if DATE.search(sentence) else 0.0
    if kind == "definition":
        return 1.0 if COPULA.search(sentence) else 0.0
    if kind == "proposal":
        return 1.0 if PROPOSAL.search(sentence) else 0.0
    return 0.0


def answer_cue(question: str, sentence: str, *, opening: bool = False) -> float:
    """How well the sentence has the answer's form, in [0, 1] (WRONG_KIND for a gain given for a value).

    A quantity counts fully when one of the question's words follows the number
    closely (the thing counted); a definition when the question's subject opens
    the sentence before its copula; a proposal stated in an opening passage
    (abstract, introduction: ``opening``) counts more than one restated later.
    """
    kind = question_kind(question)
    if not kind:
        return 0.0
    base = answer_type_match(question, sentence)
    if not base:
        return 0.0
    terms = _subject_terms(question)
    if kind == "number":
        if _only_relative_figures(sentence) and not ASKS_RELATIVE.search(question):
            return WRONG_KIND  # a gain where a value is asked: the wrong kind of answer
        membership = MEMBERSHIP.search(sentence) if ASKS_MEMBERSHIP.search(question) else None
        return 0.4 + 0.2 * _counts_asked_noun(sentence, terms) + 0.4 * bool(membership)
    if kind == "definition":
        return 0.5 + 0.5 * _defines_subject(sentence, terms)
    if kind == "proposal":
        return 0.6 + (0.4 if opening else 0.0)
    return base


def table_row_cue(question: str, label: str) -> float:
    """A table row answers a quantity question fully when its label names something the question does."""
    if question_kind(question) != "number":
        return 0.0
    named = snowball_terms(label)
    return 0.5 + 0.5 * bool(named and named <= _subject_terms(question))


def _only_relative_figures(sentence: str) -> bool:
    """The sentence states a gain or a difference ("by 37.78%") and all its figures are percentages."""
    if not RELATIVE_FIGURE.search(sentence):
        return False
    figures = [f for f in QUANTITY.findall(sentence) if not re.fullmatch(r"(?:19|20)\d\d", f)]
    return all(f.rstrip().endswith(("%", "percent")) for f in figures)


def _subject_terms(question: str) -> set[str]:
    return snowball_terms(question)


def _counts_asked_noun(sentence: str, terms: set[str]) -> float:
    """1.0 when a number is followed, within NOUN_WINDOW words, by a word of the question."""
    for match in QUANTITY.finditer(sentence):
        following = sentence[match.end() :].split()[: NOUN_WINDOW + 2]
        if snowball_terms(" ".join(following)) & terms:
            return 1.0
    return 0.0


def _defines_subject(sentence: str, terms: set[str]) -> float:
    """1.0 when the question's subject appears in the sentence's first words, before its copula."""
    copula = COPULA.search(sentence)
    if not copula:
        return 0.0
    head = " ".join(sentence[: copula.start()].split()[:SUBJECT_WINDOW])
    return 1.0 if snowball_terms(head) & terms else 0.0


def rarity_weights(question: str, texts: Sequence[str]) -> dict[str, float]:
    """The question's terms weighted by inverse frequency among ``texts`` (smoothed, never zero)."""
    terms = snowball_terms(question)
    counts = Counter(term for text in texts for term in snowball_terms(text) & terms)
    total = len(texts)
    return {term: math.log(1.0 + (total + 1) / (counts[term] + 0.5)) for term in terms}


def rarity_overlap(weights: dict[str, float], text: str) -> float:
    """Share of the question's rarity-weighted terms the text holds (0 with no terms)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    held = snowball_terms(text)
    return sum(w for term, w in weights.items() if term in held) / total
