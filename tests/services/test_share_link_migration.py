"""Migration 0009 on existing rows: one share token per collection; subscriptions to unlisted ones end."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("knowledge", "0008_agentic")]
AFTER = [("knowledge", "0009_share_links_and_revocation")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _migrate_to_latest() -> None:
    """Back to every app's newest migration (later ones included), as the other tests expect."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.security
@pytest.mark.django_db(transaction=True)
def test_existing_collections_get_distinct_tokens_and_paused_subscriptions_end(alice, bob):
    old = _migrate(BEFORE)
    try:
        profile = old.get_model("knowledge", "ChunkProfile").objects.create(name="m", is_active=False)
        Collection = old.get_model("knowledge", "Collection")
        made = {
            name: Collection.objects.create(
                name=name, owner_id=alice.pk, chunk_profile=profile, embedding_model="m", listed=listed
            )
            for name, listed in [("listed", True), ("unlisted", False), ("other", False)]
        }
        Subscription = old.get_model("knowledge", "Subscription")
        for collection in made.values():
            Subscription.objects.create(user_id=bob.pk, collection=collection, is_active=True)
    except BaseException:
        _migrate_to_latest()
        raise
    new = _migrate(AFTER)
    _migrate_to_latest()
    tokens = dict(new.get_model("knowledge", "Collection").objects.values_list("name", "share_token"))
    assert len(set(tokens.values())) == 3 and all(len(token) >= 43 for token in tokens.values())
    active = new.get_model("knowledge", "Subscription").objects.filter(is_active=True)
    assert list(active.values_list("collection__name", flat=True)) == ["listed"]
    assert not new.get_model("knowledge", "Subscription").objects.filter(revoked_at__isnull=False).exists()
