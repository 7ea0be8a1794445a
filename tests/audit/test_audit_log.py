"""The log itself: read-only in the admin, append-only in the database, purged past its retention,
exported as CSV and JSON Lines, free of secrets, and free for a retrieve request."""

from __future__ import annotations

import csv
import datetime
import io
import json

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.api_tokens import token_create
from accounts.audit import AuditSubject, audit_events_purge, audit_record
from accounts.models import AuditEvent
from knowledge.services.collections import collection_create
from tests.audit.conftest import only_event

pytestmark = pytest.mark.django_db


@pytest.fixture
def event(alice):
    return audit_record(
        action="collection.changed", actor=alice, obj=AuditSubject(object_repr="=HYPERLINK(evil)")
    )


def test_the_admin_shows_events_but_refuses_add_change_and_delete(admin_as, event):
    listing = admin_as.get("/admin/accounts/auditevent/")
    assert listing.status_code == 200 and "collection.changed" in listing.content.decode()
    assert "delete_selected" not in listing.content.decode()
    detail = f"/admin/accounts/auditevent/{event.pk}/change/"
    assert admin_as.get(detail).status_code == 200  # viewed read-only
    assert admin_as.post(detail, {"action": "x"}).status_code == 403
    assert admin_as.post(f"/admin/accounts/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert admin_as.get("/admin/accounts/auditevent/add/").status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"}
    admin_as.post("/admin/accounts/auditevent/", bulk)
    assert AuditEvent.objects.filter(pk=event.pk).exists()


@pytest.mark.parametrize(
    "sql", ["UPDATE accounts_auditevent SET action = 'x'", "DELETE FROM accounts_auditevent"]
)
def test_the_database_refuses_update_and_delete(event, sql):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql)
    assert AuditEvent.objects.get(pk=event.pk).action == "collection.changed"


def test_deleting_the_actor_keeps_the_event_and_the_name(event, alice):
    alice.delete()
    event.refresh_from_db()
    assert (event.actor, event.actor_name) == (None, "alice")


def test_purge_deletes_only_events_past_retention(alice, settings):
    settings.KNOWLEDGE_AUDIT_RETENTION_DAYS = 30
    now = timezone.now()
    old = AuditEvent.objects.create(action="auth.login", actor=alice, at=now - datetime.timedelta(days=31))
    recent = audit_record(action="auth.login", actor=alice)
    past_retention = AuditEvent.objects.filter(at__lt=now - datetime.timedelta(days=30)).count()
    assert past_retention >= 1
    assert audit_events_purge(now=now) == past_retention
    assert not AuditEvent.objects.filter(pk=old.pk).exists()
    assert AuditEvent.objects.filter(pk=recent.pk).exists()
    settings.KNOWLEDGE_AUDIT_RETENTION_DAYS = 0
    kept = AuditEvent.objects.count()
    assert audit_events_purge(now=now + datetime.timedelta(days=3650)) == 0  # 0 keeps them forever
    assert AuditEvent.objects.count() == kept


def test_exports_keep_the_filters_and_defuse_formulas(admin_as, event, alice):
    audit_record(action="auth.login", actor=alice)
    response = admin_as.get("/admin/accounts/auditevent/export/csv/?action=collection.changed")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:3] == ["id", "at", "actor_name"] and len(rows) == 2
    assert rows[1][5] == "collection.changed" and rows[1][8] == "'=HYPERLINK(evil)"
    response = admin_as.get("/admin/accounts/auditevent/export/jsonl/")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert len(lines) == AuditEvent.objects.count() and "collection.changed" in {x["action"] for x in lines}
    assert admin_as.get("/admin/accounts/auditevent/export/xml/").status_code == 404


@pytest.mark.parametrize("query", ["at__year=abc", "at__gte=not-a-date", "actor__id__exact=x"])
def test_an_export_with_a_bad_filter_is_a_400_naming_it(admin_as, event, query):
    response = admin_as.get(f"/admin/accounts/auditevent/export/csv/?{query}")
    assert response.status_code == 400 and response.content.decode().startswith("bad filter")


def test_no_secret_is_ever_recorded(admin_as, bearer, alice, client):
    token, secret = token_create(user=alice, name="t")
    shared = collection_create(name="Shared", owner=alice, visibility="unlisted")
    bearer(alice).post(f"/api/v1/collections/{shared.pk}/share-link/")
    shared.refresh_from_db()
    client.post("/accounts/login/", {"username": "alice", "password": "Wr0ng-Guess-99"})
    data = {"password1": "S3cret-New-Pass!", "password2": "S3cret-New-Pass!", "usable_password": "true"}
    admin_as.post(f"/admin/auth/user/{alice.pk}/password/", data)
    everything = str(list(AuditEvent.objects.values()))
    for secret_text in (secret, token.key_hash, shared.share_token, "Wr0ng-Guess-99", "S3cret-New-Pass!"):
        assert secret_text not in everything
    assert AuditEvent.objects.filter(action="share_link.rotated").exists()


def test_a_command_records_through_the_command_channel():
    call_command("knowledge_config", "--set", "maxDocs=9", stdout=io.StringIO())
    event = only_event("setting.changed")
    assert (event.channel, event.actor) == ("command", None)


def test_a_retrieve_request_costs_no_audit_query(bearer, alice):
    client = bearer(alice)
    body = {"question": "anything", "collections": [collection_create(name="Notes", owner=alice).pk]}
    client.post("/api/v1/retrieve/", body, format="json")
    events = AuditEvent.objects.count()
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/api/v1/retrieve/", body, format="json")
    assert response.status_code == 200, response.content
    assert not [q for q in queries.captured_queries if "auditevent" in q["sql"]]
    assert AuditEvent.objects.count() == events


def _delete_as(settings_: list[tuple[str, str]], pk: int) -> int:
    """DELETE one event in a transaction that set ``settings_`` (name, value) first."""
    with transaction.atomic(), connection.cursor() as cursor:
        for name, value in settings_:
            cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
        cursor.execute("DELETE FROM accounts_auditevent WHERE id = %s", [pk])
        return cursor.rowcount


def test_a_purge_flag_deletes_only_rows_older_than_its_own_cutoff(event, alice):
    """A session that sets the purge flag still cannot delete a recent event, nor any without a cutoff."""
    old = AuditEvent.objects.create(
        action="auth.login", actor=alice, at=timezone.now() - datetime.timedelta(days=400)
    )
    cutoff = (timezone.now() - datetime.timedelta(days=365)).isoformat()
    future = (timezone.now() + datetime.timedelta(days=1)).isoformat()
    purge = ("knowledge.audit_purge", "on")
    refused = [
        [purge],  # no cutoff
        [purge, ("knowledge.audit_purge_before", "soon")],  # unreadable
        [purge, ("knowledge.audit_purge_before", future)],  # not in the past
        [purge, ("knowledge.audit_purge_before", cutoff)],  # the event is newer than the cutoff
    ]
    for settings_ in refused:
        with pytest.raises(DatabaseError, match="append-only"):
            _delete_as(settings_, event.pk)
    assert AuditEvent.objects.filter(pk=event.pk).exists()
    assert _delete_as([purge, ("knowledge.audit_purge_before", cutoff)], old.pk) == 1


def test_truncate_is_refused_outside_the_test_suites_sessions(event):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # else the pending foreign-key checks refuse it
            cursor.execute("SET LOCAL knowledge.audit_truncate = 'off'")
            cursor.execute("TRUNCATE accounts_auditevent CASCADE")
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_a_purge_refuses_a_cutoff_inside_the_retention(event, settings):
    from config.base.errors import KnowledgeError

    settings.KNOWLEDGE_AUDIT_RETENTION_DAYS = 30
    with pytest.raises(KnowledgeError, match="retention"):
        audit_events_purge(now=timezone.now() + datetime.timedelta(days=31))
    assert AuditEvent.objects.filter(pk=event.pk).exists()
