"""Sign-ins, failed sign-ins, lock-outs, password changes and API tokens: one record each, on every path."""

from __future__ import annotations

import threading
import time

import pytest
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.db import connection, transaction
from django.test import Client, RequestFactory

from accounts.models import ApiToken, AuditEvent
from tests.audit.conftest import only_event

pytestmark = pytest.mark.django_db


def test_sign_in_on_the_page_and_the_admin(alice, operator):
    Client().post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    event = only_event("auth.login", actor=alice)
    assert (event.channel, event.object_id, event.actor_name, event.address) == (
        "page",
        str(alice.pk),
        "alice",
        "127.0.0.1",
    )
    Client().post("/admin/login/?next=/admin/", {"username": "operator", "password": "pw-operator"})
    assert only_event("auth.login", actor=operator).channel == "admin"


def test_failed_sign_in_then_lock_out_once(alice, settings):
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    for _ in range(5):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    failed = AuditEvent.objects.filter(action="auth.login_failed")
    assert failed.count() == 5 and {e.object_id for e in failed} == {str(alice.pk)}
    assert all(e.actor is None for e in failed)
    locked = only_event("auth.locked_out")
    assert (locked.object_repr, locked.channel) == ("alice", "page")


def _counted(*, address: str, failures: int) -> None:
    """alice's failures from ``address`` as django-axes counts them."""
    AccessAttempt.objects.create(
        username="alice",
        ip_address=address,
        user_agent="",
        http_accept="",
        path_info="/accounts/login/",
        get_data="",
        post_data="",
        failures_since_start=failures,
    )


def test_a_lock_out_whose_count_jumps_past_the_limit_is_still_recorded_once(alice, settings, rf):
    """Two failures at once, or an address's count over the pair's: the limit is passed, not met."""
    settings.AXES_FAILURE_LIMIT = settings.LOGIN_ADDRESS_FAILURE_LIMIT = 3
    _counted(address="127.0.0.1", failures=5)  # what django-axes has counted when it sends the signal
    for failures in (5, 6, None):  # past the limit, again, then refused uncounted while locked
        request = rf.post("/accounts/login/")
        request.axes_failures_since_start = failures
        user_locked_out.send(sender="axes", request=request, username="alice", ip_address="127.0.0.1")
    locked = only_event("auth.locked_out")
    assert (locked.object_id, locked.changes) == (
        str(alice.pk),
        {"locked": [None, ["username alice at address 127.0.0.1", "address 127.0.0.1"]]},
    )


def test_failed_sign_in_of_an_unknown_name_through_the_api(anon):
    anon.post("/api/v1/auth/token/", {"username": "nobody", "password": "x"}, format="json")
    event = only_event("auth.login_failed")
    assert (event.object_repr, event.object_id, event.channel) == ("nobody", "", "api")


def test_password_change_on_the_page(alice):
    client = Client()
    client.force_login(alice)
    data = {"old_password": "pw-alice", "new_password1": "N3w-secret-pw!", "new_password2": "N3w-secret-pw!"}
    assert client.post("/accounts/password/change/", data).status_code == 302
    event = only_event("auth.password_changed", actor=alice)
    assert event.channel == "page" and event.changes == {"password": ["(changed)", "(changed)"]}


def test_password_change_in_the_admin_records_no_second_event(admin_as, operator, alice):
    data = {"password1": "An0ther-secret!", "password2": "An0ther-secret!", "usable_password": "true"}
    response = admin_as.post(f"/admin/auth/user/{alice.pk}/password/", data)
    assert response.status_code == 302, response.content
    event = only_event("auth.password_changed", object_id=str(alice.pk))
    assert (event.actor, event.channel) == (operator, "admin")
    assert not AuditEvent.objects.filter(action__startswith="admin.", object_id=str(alice.pk)).exists()


def test_tokens_created_and_revoked_on_the_page_and_the_api(alice, bearer, anon):
    client = Client()
    client.force_login(alice)
    client.post("/accounts/tokens/", {"name": "laptop"})
    token = ApiToken.objects.get(name="laptop")
    assert only_event("token.created", object_id=str(token.pk)).actor == alice
    client.post(f"/accounts/tokens/{token.pk}/revoke/")
    assert only_event("token.revoked", object_id=str(token.pk)).channel == "page"

    response = anon.post(
        "/api/v1/auth/token/", {"username": "alice", "password": "pw-alice", "name": "ci"}, format="json"
    )
    assert response.status_code == 201
    ci = ApiToken.objects.get(name="ci")
    event = only_event("token.created", object_id=str(ci.pk))
    assert (event.actor, event.channel) == (alice, "api")
    assert bearer(alice).delete(f"/api/v1/tokens/{ci.pk}/").status_code == 204
    assert only_event("token.revoked", object_id=str(ci.pk)).actor == alice


def test_operator_revoking_in_the_admin_is_the_actor(admin_as, operator, alice):
    from accounts.api_tokens import token_create

    token, _ = token_create(user=alice, name="old")
    admin_as.post("/admin/accounts/apitoken/", {"action": "revoke_tokens", "_selected_action": [token.pk]})
    event = only_event("token.revoked", object_id=str(token.pk))
    assert (event.actor, event.channel) == (operator, "admin")


def test_an_address_reaching_its_limit_after_a_locked_pair_is_recorded(alice, bob, settings):
    """The pair (alice, the address) is past its limit already when the address reaches its own:
    the count the signal carries is the pair's, yet the address's lock-out is a new one (it locks
    every name from there)."""
    settings.AXES_FAILURE_LIMIT, settings.LOGIN_ADDRESS_FAILURE_LIMIT = 3, 5
    client = Client(REMOTE_ADDR="10.0.0.1")
    for _ in range(4):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert only_event("auth.locked_out").changes["locked"][1] == ["username alice at address 10.0.0.1"]
    client.post("/accounts/login/", {"username": "bob", "password": "wrong"})
    locked = AuditEvent.objects.filter(action="auth.locked_out").order_by("pk")
    assert [(e.object_repr, e.address, e.changes["locked"][1]) for e in locked] == [
        ("alice", "10.0.0.1", ["username alice at address 10.0.0.1"]),
        ("bob", "10.0.0.1", ["address 10.0.0.1"]),
    ]


def test_failures_from_many_addresses_record_no_lock_out_of_the_name(alice):
    """Each address failed once: no pair and no address reached a limit, so nothing was locked."""
    for n in range(12):
        Client(REMOTE_ADDR=f"10.0.1.{n}").post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert AuditEvent.objects.filter(action="auth.login_failed").count() == 12
    assert not AuditEvent.objects.filter(action="auth.locked_out").exists()


def _send_locked_out(failures: int) -> None:
    """What django-axes sends for a failure of alice's from 10.0.0.1 counted at ``failures``."""
    request = RequestFactory().post("/accounts/login/")
    request.axes_failures_since_start = failures
    user_locked_out.send(sender="axes", request=request, username="alice", ip_address="10.0.0.1")


def _in_own_connection(work):
    def run():
        try:
            work()
        finally:
            connection.close()  # the thread's own connection, not the test's

    return run


def _waiting_on_an_advisory_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_two_failures_reaching_the_limit_at_once_record_one_lock_out(alice, settings):
    """The first failure's record is not committed yet when the second one looks for it: the second
    waits for the first's transaction, then finds its record and adds none."""
    settings.AXES_FAILURE_LIMIT = 3
    _counted(address="10.0.0.1", failures=3)
    with transaction.atomic():
        _send_locked_out(3)  # recorded in this transaction, still open
        second = threading.Thread(target=_in_own_connection(lambda: _send_locked_out(4)))
        second.start()
        deadline = time.monotonic() + 10
        while second.is_alive() and not _waiting_on_an_advisory_lock() and time.monotonic() < deadline:
            time.sleep(0.02)
    second.join(timeout=10)
    assert not second.is_alive()
    assert AuditEvent.objects.filter(action="auth.locked_out").count() == 1
