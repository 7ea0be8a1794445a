"""Prepared selects build the same instances as the querysets they replace, on real PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.api_tokens import _ACTIVE_TOKEN, secret_hash, token_authenticate, token_create, token_revoke
from accounts.models import ApiToken
from config.base.database import PoolSettings, database_config
from config.base.prepared import PreparedSelect, planned_once_cursor
from knowledge.models import Chunk, Document, KnowledgeSetting
from knowledge.parameter_values import global_setting_set, global_settings
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
    found = _ACTIVE_TOKEN.fetch([secret_hash(secret)])
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


_OWNED = "SELECT count(*) FROM knowledge_collection WHERE owner_id = %s AND name <> %s"


def _prepared_runs(cursor) -> list[int]:
    """How often each prepared statement of ``_OWNED`` ran on this connection (one plan per run)."""
    cursor.execute(
        "SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE statement = %s",
        [_OWNED.replace("%s", "$1", 1).replace("%s", "$2", 1)],
    )
    return [row[0] for row in cursor.fetchall()]


def test_a_planned_once_statement_is_prepared_once_per_connection_and_logged_with_its_values(alice):
    collection_create(name="hills", owner=alice)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            with planned_once_cursor() as cursor:
                cursor.execute(_OWNED, [alice.pk, "x"])
                assert cursor.fetchone() == (1,)
    with connection.cursor() as cursor:
        assert _prepared_runs(cursor) == [3]  # parsed once, run three times
    # The query log shows what ran, values in place (as for Django's own cursors).
    assert queries[-1]["sql"] == _OWNED % (alice.pk, "'x'")


def test_with_prepared_statements_off_nothing_is_prepared(alice, monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", "postgres://knowledge@db.example:5432/knowledge")
    config = database_config(
        data_dir=tmp_path,
        pool=PoolSettings(max_size=2),
        conn_max_age=0,
        connect_timeout=3,
        prepared_statements=False,
    )
    assert config["OPTIONS"]["prepare_threshold"] is None  # what psycopg reads as "never prepare"
    connection.ensure_connection()
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    for _ in range(3):
        with planned_once_cursor() as cursor:
            cursor.execute(_OWNED, [alice.pk, "x"])
            assert cursor.fetchone() == (0,)
    with connection.cursor() as cursor:
        assert _prepared_runs(cursor) == []
