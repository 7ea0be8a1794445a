"""What kind of answer a question asks for, and how well a sentence holds it (pure, no model).

A question's form says what its answer looks like: "how long" wants a duration,
"how many" a quantity of something, "when" a date, "who" or "which
organisation" a name, "what is X" (or "what are X called") a sentence that
defines or names X, "what happens if" a consequence, "what does X propose" the
statement of a contribution. Each cue is a number in [0, 1]; the extractive
synthesiser adds it, weighted, to a sentence's similarity. The cues are general
properties of the text, never phrases of particular questions: the answer's
form (a number with a unit of time, a capitalised name, a copula after the
subject, "if ... then", "we introduce ...") counts fully when it stands beside
the question's own content words (within ``NEAR`` words), half when it is
elsewhere in the sentence: "estimated to average about 30 minutes" answers how
long filling in takes on average, "over 15 years old" beside "discharge" does
not.

``rarity_overlap`` weighs the question's content words (``question_terms``: its
words without the form of the question, with "not" for any negation it holds)
by how rare they are among the candidate sentences: a word every candidate holds
("PaSa" in a paper about PaSa) tells them apart no more than a stop word does,
and "What can't pdfplumber do?" is answered by what pdfplumber does not do.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from knowledge.text.words import snowball_terms

QUANTITY = re.compile(r"(?<![\w@])\d[\d,.]*(?:\s?(?:k|m|bn|%|percent|million|billion|thousand))?(?![\w@])")
# A stretch of time: an amount (a number, a range, a number word, "a few") and a unit of time, or "a"
# and a unit. "15 years old" is an age, and "a second" an ordinal as often as a stretch of time.
_AMOUNT = (
    r"(?:\d[\d,.]*(?:\s?(?:-|to|or)\s?\d[\d,.]*)?|(?:a )?few|several|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|twelve|fifteen|twenty|thirty|sixty)"
)
DURATION = re.compile(
    rf"(?<![\w@])(?:{_AMOUNT}\s?-?\s?seconds?|(?:{_AMOUNT}|an?)\s?-?\s?"
    r"(?:minutes?|mins|hours?|hrs|days?|weeks?|months?|years?|decades?))\b(?!\s+old\b)",
    re.IGNORECASE,
)
DATE = re.compile(
    r"\b(?:1[5-9]\d\d|20\d\d)\b|\b(?:january|february|march|april|may|june|july|august|september"
    r"|october|november|december)\b|\b\d{4}-\d\d-\d\d\b",
    re.IGNORECASE,
)
# A name: a capitalised word or an acronym that does not open the sentence (checked in _answer_spans).
NAME = re.compile(r"\b[A-Z][\w&'.-]*")
COPULA = re.compile(
    r"\b(?:is|are|was|were|means|refers to|consists of|is defined as|is known as|called|named|termed)\b", re.I
)
# A condition, a cause or a consequence stated ("if ...", "otherwise ...", "because ...", "results in").
CONSEQUENCE = re.compile(
    r"\b(?:if|unless|otherwise|whenever|because|therefore|thus|hence|so that|as a result|due to"
    r"|results? in|resulted in|leads? to|led to|causes?|caused|contribut\w* to|responsible for)\b",
    re.IGNORECASE,
)
PROPOSAL = re.compile(
    r"\b(?:we|this (?:paper|work|article|study)|our (?:paper|work))\s+(?:\w+\s+){0,2}?"
    r"(?:propose|proposes|introduce|introduces|present|presents|develop|develops|describe|build)\b"
    r"|\b(?:in this (?:paper|work|article|study))\b|\bmain contributions?\b",
    re.IGNORECASE,
)
# A negation, in a question or a sentence ("What can't pdfplumber do?", "features it does not provide").
NEGATION = re.compile(r"n't\b|\b(?:not|cannot|never|no|without)\b", re.IGNORECASE)
NEGATION_TERM = "not"

ASKS_DURATION = re.compile(
    r"\bhow long\b|\bhow much time\b|\bhow many (?:seconds|minutes|hours|days|weeks|months|years)\b",
    re.IGNORECASE,
)
ASKS_NUMBER = re.compile(
    r"\bhow (?:many|much|large|big|old|often|far|fast|high)\b"
    r"|\bwhat (?:percentage|share|number|amount|total|value|score|rate|size|price|cost)\b"
    r"|^\s*what\b.*\b(?:reach|reaches|reached|achieve|achieves|achieved|score|scores|scored|cost|costs)\b",
    re.IGNORECASE,
)
ASKS_DATE = re.compile(
    r"\bwhen\b|\bwhat (?:year|date|day|month)\b|\bwhich (?:year|date|day)\b", re.IGNORECASE
)
# "Who founded ...", "which organisation ...": a name. "Who is X" asks for a definition.
ASKS_NAME = re.compile(
    r"^\s*who\b(?! (?:is|are|was|were)\b)|\b(?:which|what) (?:organi[sz]ations?|company|companies|agency"
    r"|agencies|board|office|department|institution|court|party|person|people|team|university|firm"
    r"|committee|body)\b",
    re.IGNORECASE,
)
ASKS_CONSEQUENCE = re.compile(
    r"\bwhat (?:happens|will happen|would happen|happened)(?: (?:if|when|after))?\b|\bwhat if\b|^\s*why\b"
    r"|\bwhat (?:causes|caused)\b"
    r"|\bwhat (?:is|are) the (?:effects?|consequences?|results?|outcomes?)\b",
    re.IGNORECASE,
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
# The words that only say which form of answer is asked for ("how long does it take", "what happens if"):
# no sentence is a better answer for holding them.
_FORM_WORDS = re.compile(
    r"\bhow (?:long|many|much(?: time)?|large|big|old|often|far|fast|high)\b"
    r"(?: (?:does|do|did|will|would|should|can) (?:it|they|this|that|you|we|i) (?:take|last)\b)?"
    r"|\bwhat (?:happens|will happen|would happen|happened)(?: (?:if|when|after))?\b|\bwhat if\b",
    re.IGNORECASE,
)
# "What does the paper propose?" is not a definition question, though it starts like one.
_WHAT_DOES = re.compile(r"^\s*what (?:does|did|do)\b", re.IGNORECASE)
# The cue of a sentence holding the wrong kind of figure (a gain or difference for a value).
WRONG_KIND = -0.5
# The answer's neighbourhood: an answer within this many words of one of the question's content
# words is about what was asked ("average about 30 minutes", "35k fine-grained academic queries").
NEAR = 5
# How many words into a sentence a defined subject appears ("A gravity hill, also known as ...").
SUBJECT_WINDOW = 8
# The form of the answer, when it is found away from the question's words: half the cue.
ELSEWHERE = 0.5

# The form each kind of question asks for, found in a sentence (the question kinds in order of test).
_FORMS = {
    "duration": DURATION,
    "number": QUANTITY,
    "date": DATE,
    "name": NAME,
    "consequence": CONSEQUENCE,
}
# "What happens when ..." asks for a consequence, not a date: the consequence is tested first.
_ASKS = (
    ("duration", ASKS_DURATION),
    ("number", ASKS_NUMBER),
    ("consequence", ASKS_CONSEQUENCE),
    ("date", ASKS_DATE),
    ("name", ASKS_NAME),
)


def question_kind(question: str) -> str:
    """ "duration", "number", "date", "name", "consequence", "proposal", "definition" or "" (no
    particular form)."""
    for kind, asks in _ASKS:
        if asks.search(question):
            return kind
    if ASKS_PROPOSAL.search(question) and (_WHAT_DOES.search(question) or "contribution" in question.lower()):
        return "proposal"
    if ASKS_DEFINITION.search(question):
        return "definition"
    return ""


def question_terms(question: str) -> set[str]:
    """The question's content words (stemmed), without the words of its form ("how long does it
    take", "what happens if"), and NEGATION_TERM when it asks about what is not so."""
    return text_terms(_FORM_WORDS.sub(" ", question))


def text_terms(text: str) -> set[str]:
    """Stemmed content words of a text, with NEGATION_TERM for any negation ("can't", "does not")."""
    terms = snowball_terms(text)
    return terms | {NEGATION_TERM} if NEGATION.search(text) else terms


def answer_type_match(question: str, sentence: str) -> float:
    """1.0 when the sentence holds the form of answer the question asks for (anywhere in it)."""
    kind = question_kind(question)
    if kind in _FORMS:
        return 1.0 if _answer_spans(kind, sentence) else 0.0
    if kind == "definition":
        return 1.0 if COPULA.search(sentence) else 0.0
    if kind == "proposal":
        return 1.0 if PROPOSAL.search(sentence) else 0.0
    return 0.0


def answer_cue(question: str, sentence: str, *, opening: bool = False) -> float:
    """How well the sentence has the answer's form, in [0, 1] (WRONG_KIND for a gain given for a value).

    The form counts fully beside the question's content words, ELSEWHERE away from
    them; a definition counts fully when the question's subject opens the sentence
    before its copula; a proposal stated in an opening passage (abstract,
    introduction: ``opening``) counts more than one restated later.
    """
    kind = question_kind(question)
    if not answer_type_match(question, sentence):
        return 0.0
    terms = question_terms(question)
    if kind == "number" and _only_relative_figures(sentence) and not ASKS_RELATIVE.search(question):
        return WRONG_KIND  # a gain where a value is asked: the wrong kind of answer
    if kind in _FORMS:
        return ELSEWHERE + (1 - ELSEWHERE) * _beside_question(_answer_spans(kind, sentence), sentence, terms)
    if kind == "definition":
        return ELSEWHERE + (1 - ELSEWHERE) * _defines_subject(sentence, terms)
    if kind == "proposal":
        return 0.6 + (0.4 if opening else 0.0)
    return 0.0


def table_row_cue(question: str, label: str) -> float:
    """A table row answers a quantity question fully when its label names something the question does."""
    if question_kind(question) != "number":
        return 0.0
    named = snowball_terms(label)
    return 0.5 + 0.5 * bool(named and named <= question_terms(question))


def _only_relative_figures(sentence: str) -> bool:
    """The sentence states a gain or a difference ("by 37.78%") and all its figures are percentages."""
    if not RELATIVE_FIGURE.search(sentence):
        return False
    figures = [f for f in QUANTITY.findall(sentence) if not re.fullmatch(r"(?:19|20)\d\d", f)]
    return all(f.rstrip().endswith(("%", "percent")) for f in figures)


# A word of a sentence, with the "n't" of a contracted negation kept on it.
_TOKEN = re.compile(r"[^\W_]+(?:'t)?")


def _answer_spans(kind: str, sentence: str) -> list[tuple[int, int]]:
    """Where the form of answer ``kind`` asks for is in the sentence, as character spans."""
    spans = [m.span() for m in _FORMS[kind].finditer(sentence)]
    if kind == "name":  # every sentence opens with a capital: its first word names nothing by that
        first = _TOKEN.search(sentence)
        spans = [span for span in spans if first is None or span[0] != first.start()]
    return spans


def _beside_question(spans: list[tuple[int, int]], sentence: str, terms: set[str]) -> float:
    """1.0 when an answer span lies within NEAR words of one of the question's content words."""
    words = list(_TOKEN.finditer(sentence))
    inside = {i for i, w in enumerate(words) for start, end in spans if w.start() < end and start < w.end()}
    asked = [i for i, w in enumerate(words) if i not in inside and text_terms(w.group()) & terms]
    return 1.0 if any(abs(i - j) <= NEAR for i in inside for j in asked) else 0.0


def _defines_subject(sentence: str, terms: set[str]) -> float:
    """1.0 when the question's subject appears in the sentence's first words, before its copula."""
    copula = COPULA.search(sentence)
    if not copula:
        return 0.0
    head = " ".join(sentence[: copula.start()].split()[:SUBJECT_WINDOW])
    return 1.0 if snowball_terms(head) & terms else 0.0


def rarity_weights(question: str, texts: Sequence[str]) -> dict[str, float]:
    """The question's terms weighted by inverse frequency among ``texts`` (smoothed, never zero)."""
    terms = question_terms(question)
    counts = Counter(term for text in texts for term in text_terms(text) & terms)
    total = len(texts)
    return {term: math.log(1.0 + (total + 1) / (counts[term] + 0.5)) for term in terms}


def rarity_overlap(weights: dict[str, float], text: str) -> float:
    """Share of the question's rarity-weighted terms the text holds (0 with no terms)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    held = text_terms(text)
    return sum(w for term, w in weights.items() if term in held) / total
