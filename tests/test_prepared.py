"""Prepared selects build the same instances as the querysets they replace, on real PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import ApiToken
from accounts.tokens import _ACTIVE_TOKEN, _hash, token_authenticate, token_create, token_revoke
from config.base.prepared import PreparedSelect
from knowledge.config import global_setting_set, global_settings
from knowledge.models import Chunk, Document, KnowledgeSetting
from knowledge.retrieval.service import _CHUNKS_WITH_DOCUMENTS
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload

pytestmark = pytest.mark.django_db


def field_values(instance, *, skip=()) -> dict:
    fields = [f for f in instance._meta.concrete_fields if f.name not in skip]
    return {f.attname: getattr(instance, f.attname) for f in fields}


@pytest.mark.django_db(transaction=True)  # documents are processed after their upload commits
def test_chunks_with_documents_match_select_related_and_load_left_out_fields_lazily(alice, corpus):
    collection = collection_create(name="hills", owner=alice)
    path = corpus / "text" / "gravity_hill.md"
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    ids = list(Chunk.objects.filter(collection=collection).values_list("pk", flat=True))
    assert len(ids) >= 2
    expected = Chunk.objects.select_related("document").in_bulk(ids)

    with CaptureQueriesContext(connection) as queries:
        loaded = {chunk.pk: chunk for chunk in _CHUNKS_WITH_DOCUMENTS.fetch([ids])}
        documents = [chunk.document for chunk in loaded.values()]
    assert len(queries) == 1  # the documents came with the chunks
    assert sorted(loaded) == sorted(ids)
    for pk, chunk in loaded.items():
        assert field_values(chunk, skip={"embedding", "search_vector"}) == field_values(
            expected[pk], skip={"embedding", "search_vector"}
        )
        assert field_values(chunk.document) == field_values(expected[pk].document)
        assert isinstance(chunk.metadata, dict) and isinstance(chunk.document, Document)
        assert chunk.get_deferred_fields() == {"embedding", "search_vector"}
    assert all(d.display_title for d in documents)
    # A left-out field still reads its stored value (one more query), as with QuerySet.defer.
    first = loaded[ids[0]]
    assert first.search_vector == expected[ids[0]].search_vector
    assert list(first.embedding) == list(expected[ids[0]].embedding)
    assert _CHUNKS_WITH_DOCUMENTS.fetch([[]]) == []


def test_token_lookup_finds_only_an_active_token_of_an_active_user(alice):
    _, secret = token_create(user=alice, name="ci")
    found = _ACTIVE_TOKEN.fetch([_hash(secret)])
    assert [t.pk for t in found] == list(ApiToken.objects.filter(user=alice).values_list("pk", flat=True))
    assert found[0].user.pk == alice.pk and found[0].user.username == alice.username
    assert token_authenticate(secret) == alice
    assert token_authenticate(secret + "x") is None

    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert token_authenticate(secret) is None
    alice.is_active = True
    alice.save(update_fields=["is_active"])
    token_revoke(user=alice, token_id=found[0].pk)
    assert token_authenticate(secret) is None


def test_global_settings_read_what_was_stored_and_defaults_for_the_rest():
    global_setting_set(key="maxDocs", value=7, lock=True)
    settings_now = global_settings()
    assert settings_now["maxDocs"] == (7, True)
    row = KnowledgeSetting.objects.get(key="maxDocs")
    assert settings_now["maxDocs"] == (row.value, row.is_locked)
    global_setting_set(key="maxDocs", value=9, lock=False)
    assert global_settings()["maxDocs"] == (9, False)  # read again on every call


def test_only_a_non_null_foreign_key_can_be_joined():
    with pytest.raises(ValueError, match="non-null foreign key"):
        PreparedSelect(Document, related="uploaded_by", where="TRUE").fetch()
