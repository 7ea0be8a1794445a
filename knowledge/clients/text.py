"""Word-level text helpers shared by answer extraction, summaries and query classification."""

from __future__ import annotations

import re
import threading

WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    """a an and are as at be by can do does did for from has have how i in is it its of on or
    that the their there these this to was what when where which who why will with you your
    about into more tell me than then they them those""".split()
)


def content_terms(text: str) -> set[str]:
    """The stems of the words of ``text`` that carry meaning (no stop words, no single letters)."""
    return {stem(w) for w in WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1}


def stem(word: str) -> str:
    """A crude suffix stripper (-ing, -ed, -es, -s), enough to match "planets" with "planet"."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def snowball_terms(text: str) -> set[str]:
    """``content_terms`` with English Snowball stems: "died" and "die", "rolled" and "roll" match.

    Answer extraction scores sentences with it; the crude ``stem`` stays where
    summaries and query classification were tuned with it.
    """
    words = [w for w in WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]
    return set(_snowball().stemWords(words))


_thread_state = threading.local()


def _snowball():
    """This thread's stemmer: a Snowball stemmer keeps the word it works on in itself, so threads
    sharing one (concurrent answers under the ASGI server) corrupt each other's words."""
    stemmer = getattr(_thread_state, "snowball", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _thread_state.snowball = snowballstemmer.stemmer("english")
    return stemmer
