"""Word-level text helpers shared by answer extraction, summaries and query classification."""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    """a an and are as at be by can do does did for from has have how i in is it its of on or
    that the their there these this to was what when where which who why will with you your
    about into more tell me than then they them those""".split()
)


# Runs of characters written without spaces between words, as the full-text column reads them
# (knowledge_search_vector, migration 0019, holds the same pattern; a test keeps them equal):
# Han, hiragana and katakana together (Japanese mixes them within a word), Hangul, Thai.
CJK_RUN = re.compile(
    r"[\u3005\u3006\u3041-\u309f\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
    r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
    r"\uff66-\uff9f]+"
    r"|[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]+"
    r"|[\u0e01-\u0e5b]+"
)
_HIRAGANA = re.compile(r"[\u3041-\u309f]")


def cjk_bigrams(text: str) -> list[str]:
    """The overlapping character pairs of each run of CJK, Hangul or Thai text (a run of one: the
    character), NFKC-normalised, in order: the full-text column's terms for such text."""
    grams: list[str] = []
    for run in CJK_RUN.findall(unicodedata.normalize("NFKC", text)):
        grams += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return grams


def mostly_without_spaces(text: str) -> bool:
    """At least half of the text's letters are CJK, Hangul or Thai."""
    letters = sum(ch.isalpha() for ch in text)
    return letters > 0 and sum(map(len, CJK_RUN.findall(text))) * 2 >= letters


def is_grammatical_bigram(term: str) -> bool:
    """A CJK term holding hiragana: in Japanese, particles, endings and the seams between words
    ("ンの", "です"), not the vocabulary a question is about (written in kanji and katakana)."""
    return bool(_HIRAGANA.search(term)) and bool(CJK_RUN.fullmatch(term))


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
    """``content_terms`` with English Snowball stems: "died" and "die", "rolled" and "roll" match;
    text without spaces gives its CJK bigrams instead (grammar left out), as the search does.

    Answer extraction scores sentences with it; the crude ``stem`` stays where
    summaries and query classification were tuned with it.
    """
    words = {w for w in WORD.findall(CJK_RUN.sub(" ", text.lower())) if w not in STOPWORDS and len(w) > 1}
    bigrams = {gram for gram in cjk_bigrams(text) if not is_grammatical_bigram(gram)}
    return {snowball_stem(word) for word in words} | bigrams


# The Snowball stemmer is pure Python (~0.2 ms a word): an extractive answer stems the words of
# every candidate sentence several times over, 60 texts and 220 ms per answer, of the same few
# thousand words. A stem depends on the word alone, so it is worked out once per process.
@lru_cache(maxsize=65536)
def snowball_stem(word: str) -> str:
    return _snowball().stemWord(word)


_thread_state = threading.local()


def _snowball():
    """This thread's stemmer: a Snowball stemmer keeps the word it works on in itself, so threads
    sharing one (concurrent answers under the ASGI server) corrupt each other's words."""
    stemmer = getattr(_thread_state, "snowball", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _thread_state.snowball = snowballstemmer.stemmer("english")
    return stemmer
