"""Shared text helpers: Snowball terms stay right when many threads stem at once."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from knowledge.text.words import snowball_terms

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def test_snowball_terms_share_stems_across_inflections():
    assert snowball_terms("it died") == snowball_terms("they die") == {"die"}
    assert snowball_terms("the cars rolled uphill") == {"car", "roll", "uphil"}


def test_concurrent_answers_get_the_same_terms_as_one_thread():
    # Under the ASGI server answers are extracted in several threads at once; a Snowball stemmer
    # shared between them mixed up their words (IndexError inside the stemmer, a 500 for /query/).
    text = (CORPUS / "django-docs" / "topics" / "cache.txt").read_text()
    paragraphs = [p for p in text.split("\n\n") if len(p) > 200][:200]
    assert len(paragraphs) > 50, len(paragraphs)  # enough to stem at once
    expected = [snowball_terms(p) for p in paragraphs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(5):
            assert list(pool.map(snowball_terms, paragraphs)) == expected
