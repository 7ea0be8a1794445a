"""The previous version's web processes keep working while an upgrade is rolled out: a column added
to an existing table has a default in the database, so their inserts (which do not name it) succeed."""

from __future__ import annotations

import pytest
from django.db import connection

from knowledge.models import ChatSession, ChatTurn

pytestmark = pytest.mark.django_db


def test_a_turn_inserted_without_its_closest_matches_gets_none(alice):
    session = ChatSession.objects.create(user=alice)
    turn = ChatTurn(session=session, index=0, question="Why?")
    # The row as the previous version's ChatTurn insert writes it: every column but closest.
    fields = [f for f in ChatTurn._meta.concrete_fields if f.name not in ("id", "closest")]
    values = [f.get_db_prep_save(f.pre_save(turn, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO knowledge_chatturn ({', '.join(f.column for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})",
            values,
        )
    assert ChatTurn.objects.get(session=session).closest == []
