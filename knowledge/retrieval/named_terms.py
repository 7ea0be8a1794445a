"""The named things a question asks about, and which of them the searched documents never mention.

A question that names something specific (a product, an acronym, a standard, a drug, a year, a
version) is about that thing: if no chunk in the searched collections holds the name, nothing there
answers it, however close the passages on the same topic score ("How do I add TOTP to the login?"
over documents on logins without TOTP). Ordinary vocabulary is not such a name: a user's own word
for a concept the documents name differently ("processor" for "80186 16 bit computer") says nothing
about what the documents lack, and neither do a user's own identifiers (``my_filters.py``, a
variable name), which their code has and the documentation cannot.

What counts as a name (``named_terms``, pure):

* a quoted term ("…", “…”, `…`) of up to three words;
* an acronym: two or more capitals, digits allowed (TOTP, LSAT, NHNC1);
* a CamelCase word (WebSocket, PostgreSQL);
* a word mixing letters and digits (H264, nDCG@10), a version number (3.11, v2.0.1) or a year;
* a run of capitalised words not at the start of a sentence (New Brunswick, Django), unless most of
  the question's words are capitalised (a title-case question capitalises everything); an acronym
  right before a capitalised word opens such a run ("VS Code" is one product's name).

Never one: a word holding an underscore, a file name (``name.ext``) or a lowerCamel identifier
(the user's own names), what follows "my" or "our" ("my MacBook", "our VM": the asker's own setup,
which the documents cannot be expected to name), an exception's name (``TypeError``: what the asker
saw, which the documentation explains in other words), a single letter, a number that is not a
year, a number in the plural ("404s").

"Never mentioned" is decided with the statistics the search already read (lexical.ScopeStatistics:
each of the question's lexemes' chunk count over the searched partitions, so per scope and without
a table scan): a one-word name is missing when one of its lexemes, made by the same full-text function
as the chunks', has a count of 0; a name of several words when none of its words has a chunk. One
round trip turns the names into lexemes. The full-text parser reads a dotted path as one token
("django.test.TestCase" is the lexeme ``django.test.testcase``), so a name the lexemes miss is looked
for in the text of the chunks the search found (``mentioned_in``) before it is called missing.
"""

from __future__ import annotations

import re

from django.db import connection

from config.base.prepared import planned_once_cursor
from knowledge.models.documents import SEARCH_VECTOR_FUNCTION

_QUOTED = re.compile(r"[\"“”`]([^\"“”`\n]{2,60})[\"“”`]")
# A token keeps the inner punctuation of names and identifiers: my_filters.py, nDCG@10, C++, v2.0.1.
_TOKEN = re.compile(r"[^\W_](?:[\w.@+#/\-]*[\w+#])?")
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9]*[A-Z][A-Z0-9]*$|^[A-Z]+\d[A-Z0-9]*$")
_CAMEL = re.compile(r"^[A-Z][a-z0-9]+[A-Z]")
_CAPITALISED = re.compile(r"^[A-Z][a-z'’]+$")
_YEAR = re.compile(r"^(?:1[5-9]\d\d|20\d\d)$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+$", re.IGNORECASE)
_LETTERS_AND_DIGITS = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)")
_FILE_NAME = re.compile(r"^[\w\-]+\.[a-z][a-z0-9]{0,4}$")
_LOWER_CAMEL = re.compile(r"^[a-z]+[A-Z]")
_EXCEPTION = re.compile(r"(?:Error|Exception)$")
# A number in the plural ("404s", "the 1990s") counts something; it names nothing.
_PLURAL_NUMBER = re.compile(r"^\d+'?s$")
# Words that make what follows the asker's own: "my MacBook", "our VM" (like my_filters.py, what
# their setup has and the documents cannot be expected to name).
_OWNERS = frozenset({"my", "our"})
# Capitalised words that are grammar, not names, wherever they stand.
_NOT_NAMES = frozenset({"I", "I'm", "I’m", "I've", "I’ve", "I'd", "I’d", "I'll", "I’ll", "OK"})
# A longer quote is an error message or a sentence the asker copied, not a name.
MAX_QUOTED_WORDS = 3
# Capitalised longer words that, with no lowercase one, make a question title case (see _title_case).
MIN_TITLE_WORDS = 3


def named_terms(question: str) -> list[str]:
    """The names the question asks about (see the module docstring), in order, each once."""
    names = [term for term in (m.group(1).strip() for m in _QUOTED.finditer(question)) if _quoted_name(term)]
    unquoted = _QUOTED.sub(" , ", question)
    tokens = [(m.group(0), _starts_sentence(unquoted, m.start())) for m in _TOKEN.finditer(unquoted)]
    title_case = _title_case(tokens)
    run: list[str] = []
    owned = False  # the run follows "my" or "our": the asker's own thing
    previous = ""
    for index, (word, initial) in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else ("", True)
        if not title_case and not initial and _capitalised(word):
            owned = owned or (not run and previous.lower() in _OWNERS)
            run.append(word)
        elif not title_case and _opens_name(word, following):
            names += [" ".join(run)] if run and not owned else []
            run, owned = [word], previous.lower() in _OWNERS
        else:
            names += [" ".join(run)] if run and not owned else []
            run, owned = [], False
            if _is_name(word) and previous.lower() not in _OWNERS:
                names.append(word)
        previous = word
    names += [" ".join(run)] if run and not owned else []
    return list(dict.fromkeys(name for name in names if name))


def _opens_name(word: str, following: tuple[str, bool]) -> bool:
    """An acronym right before a capitalised word of the same sentence opens one name: "VS Code"."""
    next_word, next_initial = following
    return bool(_ACRONYM.match(word)) and _is_name(word) and not next_initial and _capitalised(next_word)


def _starts_sentence(text: str, start: int) -> bool:
    before = text[:start]
    return not before.strip() or bool(_SENTENCE_END.search(before))


def _capitalised(word: str) -> bool:
    return bool(_CAPITALISED.match(word)) and word not in _NOT_NAMES


def _title_case(tokens: list[tuple[str, bool]]) -> bool:
    """Every longer word after the first capitalised ("How Do I Configure Logging In Django?"): then
    capitals say nothing. One lowercase word of four letters or more shows ordinary casing."""
    later = [word for word, initial in tokens if not initial and len(word) > 3]
    lowercase = sum(1 for word in later if word[:1].islower())
    return lowercase == 0 and len(later) - lowercase >= MIN_TITLE_WORDS


def _quoted_name(term: str) -> bool:
    """A quoted term of up to MAX_QUOTED_WORDS words, none of them the asker's own identifier
    (`my_filters.py` in backticks is still theirs; a longer quote is an error message or a sentence)."""
    words = term.split()
    return 0 < len(words) <= MAX_QUOTED_WORDS and not any(_users_own(word) for word in words)


def _users_own(word: str) -> bool:
    """An identifier of the asker's code (underscore, file name, lowerCamel) or an exception they saw."""
    lower_camel = _LOWER_CAMEL.match(word) and not any(c.isdigit() for c in word)
    return bool("_" in word or _FILE_NAME.match(word) or lower_camel or _EXCEPTION.search(word))


def _is_name(word: str) -> bool:
    """An acronym, CamelCase, a year, a version or a letters-and-digits code; never the asker's own."""
    if _users_own(word) or word in _NOT_NAMES or len(word) < 2 or _PLURAL_NUMBER.match(word):
        return False
    return bool(
        _ACRONYM.match(word)
        or _CAMEL.match(word)
        or _YEAR.match(word)
        or _VERSION.match(word)
        or _LETTERS_AND_DIGITS.match(word)
    )


_LEXEMES_SQL = f"""
    SELECT t.i, u.lexeme
    FROM unnest(%s::text[]) WITH ORDINALITY AS t(term, i)
    CROSS JOIN LATERAL unnest({SEARCH_VECTOR_FUNCTION}(t.term)) AS u
"""


def term_lexemes(terms: list[str]) -> list[set[str]]:
    """Each term's lexemes, made like the chunks' (stop words give none): the terms not met before
    in one round trip, the others from a per-process cache (the lexeme function is immutable, and
    most questions name something)."""
    found = {term: _lexemes_known[term] for term in terms if term in _lexemes_known}
    unknown = [term for term in dict.fromkeys(terms) if term not in found]
    if unknown:
        with connection.cursor() as cursor:
            cursor.execute(_LEXEMES_SQL, [unknown])
            rows = cursor.fetchall()
        fresh: dict[str, set[str]] = {term: set() for term in unknown}
        for index, lexeme in rows:
            fresh[unknown[int(index) - 1]].add(lexeme)
        found.update({term: frozenset(lexemes) for term, lexemes in fresh.items()})
        if len(_lexemes_known) > LEXEMES_KEPT:
            _lexemes_known.clear()
        _lexemes_known.update(found)
    return [set(found[term]) for term in terms]


LEXEMES_KEPT = 10_000
_lexemes_known: dict[str, frozenset[str]] = {}


def missing_named_terms(question: str, df: dict[str, int], *, chunk_ids: list[int]) -> tuple[str, ...]:
    """The question's names that no chunk in scope holds, given its lexemes' chunk counts ``df``
    and the chunks the search found (``chunk_ids``, read for names inside dotted paths).

    A lexeme the statistics did not count (a question longer than their lookup) is taken as held:
    the test refuses only on evidence.
    """
    # A name's lexemes are among the question's: when the scope holds every one of those, no name
    # can be missing, and most answerable questions end here without a round trip.
    if not df or all(count > 0 for count in df.values()):
        return ()
    names = named_terms(question)
    unknown = [
        name for name, lexemes in zip(names, term_lexemes(names), strict=True) if _absent(name, lexemes, df)
    ]
    found = mentioned_in(unknown, chunk_ids)
    return tuple(name for name in unknown if name not in found)


def _absent(name: str, lexemes: set[str], df: dict[str, int]) -> bool:
    """A one-word name is absent when one of its lexemes is; a name of several words (a run of
    capitalised words, a quoted phrase) only when none of its words is anywhere: a follow-up
    resolved with its document's title ("National Flag of Canada Day - Wikipedia") names that
    document, though no chunk holds "Wikipedia"."""
    missing = [df.get(lexeme, 1) == 0 for lexeme in lexemes]
    if not missing:
        return False
    return all(missing) if len(name.split()) > 1 else any(missing)


# Which of the patterns one of the chunks' text holds, in one round trip for all of a question's names.
_MENTIONED_SQL = """
    SELECT p.i FROM unnest(%s::text[]) WITH ORDINALITY AS p(pattern, i)
    WHERE EXISTS (SELECT 1 FROM knowledge_chunk WHERE id = ANY(%s) AND content ~* p.pattern)
"""


def mentioned_in(names: list[str], chunk_ids: list[int]) -> set[str]:
    """Those of ``names`` that one of the chunks' text holds as a whole word (any case)."""
    if not names or not chunk_ids:
        return set()
    patterns = [_whole_word(name) for name in names]
    with planned_once_cursor() as cursor:
        cursor.execute(_MENTIONED_SQL, [patterns, chunk_ids])
        return {names[int(index) - 1] for (index,) in cursor.fetchall()}


def _whole_word(name: str) -> str:
    escaped = re.sub(r"([^\w\s])", r"\\\1", name).replace(" ", r"\s+")
    return r"(^|[^[:alnum:]_])" + escaped + r"($|[^[:alnum:]_])"
