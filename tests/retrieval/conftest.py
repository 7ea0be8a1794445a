"""Fixtures the retrieval tests share."""

from __future__ import annotations

import pytest

from knowledge.models import Profile, ProfileCollection
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload


@pytest.fixture
def reranking_profile(alice, corpus):
    """Alice's profile over a collection holding the pet store API, marked for reranking."""
    api = collection_create(name="api", owner=alice)
    path = corpus / "openapi" / "petstore-expanded-3.0.json"
    document_upload(collection=api, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    profile = Profile.objects.create(
        owner=alice, name="p", tag="p", knowledge_overrides={"maxDocs": 2, "minRelevanceScore": 0.0}
    )
    ProfileCollection.objects.create(profile=profile, collection=api, reranking=True)
    return profile
