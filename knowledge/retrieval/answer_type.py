"""The kind of value a question asks for, and whether a passage holds a value of that kind (pure).

"How much does the Pro plan cost?" is answered by a price, "When was the treaty signed?" by a date,
"How long does a refund take?" by a duration. When none of the best passages holds an expression of
that kind, whatever they say, they do not answer: a passage on the Pro plan's features scores as
close as its price list would. Only these three kinds are tested: each has a form a passage cannot
state without (a number with a currency or unit, a date, a number with a unit of time), while "how
many" or "which" are answered in too many forms to test.

Kinds (``asked_kind``): ``amount`` (a price, fee, cost or sum of money), ``date``, ``duration``.
"""

from __future__ import annotations

import re

AMOUNT, DATE, DURATION = "amount", "date", "duration"
KIND_WORDS = {AMOUNT: "a price or amount", DATE: "a date", DURATION: "a duration"}

_ASKS = (
    (
        AMOUNT,
        re.compile(
            r"\bhow much\b(?! (?:time|longer|later|earlier|memory|space|data|ram|disk|text|more|less)\b)"
            r"[^?]*\b(?:cost|costs|charge|charges|charged|pay|paid|owe|price|priced|fee|fees|spend|spent"
            r"|worth)\b"
            r"|\bhow much (?:money|does it cost|is it|are they)\b"
            r"|\bwhat(?:'s|’s| is| are| was| were) the (?:\w+ )?"
            r"(?:price|prices|cost|costs|fee|fees|charge|charges)\b"
            r"|\bwhat (?:does|do|did) [^?]{1,60}\bcost\b",
            re.IGNORECASE,
        ),
    ),
    (
        DATE,
        re.compile(
            r"^\s*when (?:was|were|did|is|will)\b"
            r"|\b(?:what|which|on what|in what) (?:date|year|day of the month)\b",
            re.IGNORECASE,
        ),
    ),
    (
        DURATION,
        re.compile(
            r"\bhow long (?:does|do|did|will|would|is|are|was|were|can|should|must|has|have)\b"
            # How long a thing is, not how long it lasts: "How long can a username be?"
            r"(?![^?]*(?:name|string|password|key|file|line|list|text|field|column|word|message|url|path)s?\b"
            r"|[^?]*\bbe\s*\?)"
            r"|\bhow many (?:seconds|minutes|hours|days|weeks|months|years)\b"
            r"|\bfor how long\b",
            re.IGNORECASE,
        ),
    ),
)

_NUMBER = r"\d[\d,.]*"
_TIME_UNITS = (
    r"(?:milliseconds?|seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?|decades?|centur(?:y|ies))"
)
_NUMBER_WORDS = (
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
    r"fifty|sixty|ninety|hundred|several|few|half an?)"
)
_QUALIFIER = r"(?:(?:business|working|calendar|full|more)\s)?"
_CURRENCY = r"(?:[$€£¥₹]|\b(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|INR|US\$)\b)"
_MONEY_WORDS = r"(?:dollars?|euros?|pounds?|cents?|yen|francs?|rupees?|円|万円|元)"
_HELD = {
    AMOUNT: re.compile(
        rf"{_CURRENCY}\s?{_NUMBER}|{_NUMBER}\s?(?:{_CURRENCY}|{_MONEY_WORDS})"
        # A number stated as the cost itself, in a unit of its own ("the cost c([Search]) to 0.1").
        rf"|\b(?:cost|costs|price|prices|priced|fee|fees|charge|charges|amount|total|価格|単価|金額|売上)\b"
        rf"[^.\n\d]{{0,40}}{_NUMBER}"
        r"|\b(?:free of charge|no charge|at no cost|no fee|for free|is free)\b",
        re.IGNORECASE,
    ),
    DATE: re.compile(
        r"\b(?:1[5-9]\d\d|20\d\d)\b"
        r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}\b"
        r"|\b\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"
        r"|\b\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\b"
        r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|yesterday)\b"
        r"|\d{1,4}年|\d{1,2}月\d{1,2}日",
        re.IGNORECASE,
    ),
    DURATION: re.compile(
        rf"\b\d[\d,.]*[\s-]?{_QUALIFIER}(?:{_TIME_UNITS}|ms|s|secs?|mins?|h|hrs?)\b"
        rf"|\b{_NUMBER_WORDS}[\s-]{_QUALIFIER}{_TIME_UNITS}\b"
        r"|\b(?:hourly|daily|weekly|monthly|yearly|annually|overnight|forever|indefinitely|never expires?)\b"
        r"|\d+\s?(?:秒|分|時間|日|週間|か月|ヶ月|年)",
        re.IGNORECASE,
    ),
}


def asked_kind(question: str) -> str | None:
    """``amount``, ``date`` or ``duration`` when the question asks for one (the first that fits)."""
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return None


def holds_kind(kind: str, text: str) -> bool:
    """Whether ``text`` holds an expression of ``kind`` (a number with a currency, a date, a duration)."""
    return bool(_HELD[kind].search(text))
