"""Which of German, French or Spanish a short text is written in, if any: a stop-word test (pure).

No language-identification package is installed, and a question needs none: its grammar words
("der", "wenn", "ich"; "le", "est", "pour"; "el", "qué", "para") say its language after a few words.
A text is in a language when at least MIN_HITS of its words, and at least MIN_SHARE of them, are that
language's grammar words, more than any other's (English counted too, so an English question with a
stray "die" or "la" stays English). Letters only one of the three uses (ß, ñ, ¿) count as one word each.
"""

from __future__ import annotations

import re

LANGUAGE_NAMES = {"de": "German", "fr": "French", "es": "Spanish", "en": "English"}
_GRAMMAR = {
    "de": """der die das den dem des ein eine einen einem einer und oder nicht ist sind war wird werden
        ich du er sie wir ihr mein meine meinen meinem mit für auf aus bei nach von zum zur im ins wie was
        wer wo wann warum welche welcher welches wenn ob kann können muss müssen soll darf auch noch nur
        schon sehr über unter gibt es sich diese dieser dieses""",
    "fr": """le la les un une des du de et ou ne pas est sont était sera je tu il elle nous vous ils mon
        ma mes ton ta avec pour sur dans par que qui quoi quel quelle quels quelles comment pourquoi où
        quand si peut peux dois doit aussi très cette ce ces au aux en y a-t-il est-ce qu'est-ce""",
    "es": """el la los las un una unos unas de del y o no es son era será yo tú él ella nosotros mi mis
        con para por en que qué quién cuál cuáles cómo dónde cuándo cuánto cuánta si puede puedo debo
        debe también muy este esta estos estas al se hay""",
    "en": """the a an and or not is are was were be will i you he she we they my your with for on in at
        by from of to what which who where when why how if can could should must do does did this that
        these those there it its about""",
}
_WORDS = {language: frozenset(words.split()) for language, words in _GRAMMAR.items()}
_OWN_LETTERS = {"de": re.compile(r"[ßäöü]"), "es": re.compile(r"[ñ¿¡]"), "fr": re.compile(r"[çœèêàù]")}
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")
MIN_HITS = 2
MIN_SHARE = 0.25


def foreign_language(text: str) -> str | None:
    """``de``, ``fr`` or ``es`` when the text is written in that language (see above), else None."""
    words = [word.lower().replace("’", "'") for word in _WORD.findall(text)]
    if not words:
        return None
    hits = {
        language: sum(1 for word in words if word in vocabulary) for language, vocabulary in _WORDS.items()
    }
    for language, letters in _OWN_LETTERS.items():
        hits[language] += len(letters.findall(text.lower()))
    best = max(hits, key=hits.get)
    runner_up = max(count for language, count in hits.items() if language != best)
    if best == "en" or hits[best] == runner_up:
        return None
    if hits[best] < MIN_HITS or hits[best] < MIN_SHARE * len(words):
        return None
    return best
