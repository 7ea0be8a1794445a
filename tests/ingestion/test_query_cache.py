"""Question vectors: a repeated question skips the encoder and gets the very same vector."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge.clients.embedding import embed_query, embed_texts, query_cache_clear, query_cache_info


@pytest.fixture(autouse=True)
def empty_cache():
    query_cache_clear()
    yield
    query_cache_clear()


def test_a_repeated_question_is_answered_from_the_cache():
    first = embed_query("How do signals work?")
    hits = query_cache_info().hits
    again = embed_query("How do signals work?")
    assert again is first
    assert query_cache_info().hits == hits + 1
    np.testing.assert_allclose(first, embed_texts(["How do signals work?"])[0], atol=1e-6)


def test_cached_vectors_are_read_only_and_distinct_questions_get_their_own():
    vector = embed_query("What is a context processor?")
    with pytest.raises(ValueError):
        vector[0] = 1.0
    other = embed_query("How do I paginate a queryset?")
    assert query_cache_info().currsize == 2
    assert float(vector @ other) < 0.99
