"""Local (password) log-in switched off, with break-glass operator accounts; and the operator
account made with the default password, held at the password change form until it changes."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.test import APIClient

from accounts.models import AccountPolicy, AuditEvent
from tests.api.conftest import generous_throttles  # noqa: F401 (fixture, used by every test here)

pytestmark = pytest.mark.django_db

TOKEN_URL = "/api/v1/auth/token/"


@pytest.fixture
def local_login_off(settings):
    settings.LOCAL_LOGIN_ENABLED = False
    settings.LOCAL_LOGIN_BREAK_GLASS = ["root"]


@pytest.fixture
def root():
    return User.objects.create_superuser(username="root", password="root-Pass-77", email="")


@pytest.fixture
def staff_member():
    return User.objects.create_user(username="sam", password="sam-Pass-77", is_staff=True)


def refused_local(username: str) -> int:
    return AuditEvent.objects.filter(action="auth.local_login_refused", object_repr=username).count()


def test_with_local_log_in_off_a_password_is_refused_on_the_page(client, local_login_off, alice):
    answer = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert answer.status_code == 200 and "_auth_user_id" not in client.session
    assert b"Password log-in is off" in answer.content
    assert refused_local("alice") == 1


def test_with_local_log_in_off_a_password_is_refused_by_the_admin(client, local_login_off, staff_member):
    answer = client.post("/admin/login/", {"username": "sam", "password": "sam-Pass-77", "next": "/admin/"})
    assert answer.status_code == 200 and "_auth_user_id" not in client.session
    assert refused_local("sam") == 1


def test_with_local_log_in_off_the_api_exchanges_no_password(local_login_off, alice):
    answer = APIClient().post(TOKEN_URL, {"username": "alice", "password": "pw-alice"}, format="json")
    assert answer.status_code == 401 and "token" not in answer.json()
    assert answer.json()["error"]["message"].startswith("password log-in is off"), answer.json()
    assert refused_local("alice") == 1


def test_the_break_glass_operator_still_signs_in_everywhere(client, local_login_off, root):
    answer = client.post("/accounts/login/?local=1", {"username": "root", "password": "root-Pass-77"})
    assert answer.status_code == 302 and client.session["_auth_user_id"] == str(root.pk)
    admin = APIClient().post(TOKEN_URL, {"username": "root", "password": "root-Pass-77"}, format="json")
    assert admin.status_code == 201
    assert refused_local("root") == 0


def test_a_break_glass_name_is_not_enough_without_being_an_operator(client, local_login_off, settings, alice):
    settings.LOCAL_LOGIN_BREAK_GLASS = ["alice"]
    client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert "_auth_user_id" not in client.session


def test_with_local_log_in_off_sign_up_and_password_reset_are_closed(client, local_login_off):
    signup = client.post(
        "/accounts/signup/", {"username": "eve", "password1": "x-Long-pass-1", "password2": "x-Long-pass-1"}
    )
    assert signup.status_code == 403 and b"Sign-up is closed" in signup.content
    assert not User.objects.filter(username="eve").exists()
    reset = client.post("/accounts/password/reset/", {"email": "alice@example.org"})
    assert reset.status_code == 403 and b"Password reset is off" in reset.content


def test_the_log_in_page_offers_the_operator_form_only_on_request(client, local_login_off):
    page = client.get("/accounts/login/").content
    assert b'name="password"' not in page and b"Sign up" not in page
    assert b'name="password"' in client.get("/accounts/login/?local=1").content


@pytest.fixture
def default_operator(monkeypatch):
    monkeypatch.delenv("OPERATOR_PASSWORD", raising=False)
    monkeypatch.delenv("OPERATOR_USERNAME", raising=False)
    call_command("ensure_operator")
    return User.objects.get(username="admin")


def test_the_default_operator_password_must_be_changed_before_anything_else(client, default_operator):
    assert client.post("/accounts/login/", {"username": "admin", "password": "admin"}).status_code == 302
    page = client.get("/collections/")
    assert page.status_code == 302 and page["Location"] == "/accounts/password/change/"
    assert client.get("/admin/").status_code == 302
    api = client.get("/api/v1/collections/")
    assert api.status_code == 403 and "default password" in api.json()["error"]["message"]
    assert client.get("/accounts/password/change/").status_code == 200
    change = {"old_password": "admin", "new_password1": "a-New-secret-93", "new_password2": "a-New-secret-93"}
    assert client.post("/accounts/password/change/", change).status_code == 302
    assert client.get("/collections/").status_code == 200
    assert not AccountPolicy.objects.get(user=default_operator).must_change_password


def test_no_api_token_for_the_default_operator_password(default_operator):
    answer = APIClient().post(TOKEN_URL, {"username": "admin", "password": "admin"}, format="json")
    assert answer.status_code == 403 and "default password" in answer.json()["error"]["message"]


def test_an_api_token_made_before_the_flag_is_refused_until_the_password_changes(default_operator):
    from accounts.api_tokens import token_create

    _, secret = token_create(user=default_operator, name="old script")
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {secret}")
    refused = client.get("/api/v1/collections/")
    assert refused.status_code == 403 and "default password" in refused.json()["error"]["message"]
    default_operator.set_password("a-New-secret-93")
    default_operator.save()
    assert client.get("/api/v1/collections/").status_code == 200


def test_the_admin_warns_while_an_operator_has_the_default_password(client, default_operator, root):
    client.force_login(root)
    assert b'the default password "admin"' in client.get("/admin/").content
    default_operator.set_password("a-New-secret-93")
    default_operator.save()
    assert b'the default password "admin"' not in client.get("/admin/").content


def test_an_operator_made_with_a_chosen_password_is_not_held(client, monkeypatch):
    monkeypatch.setenv("OPERATOR_PASSWORD", "chosen-Pass-61")
    call_command("ensure_operator")
    assert (
        client.post("/accounts/login/", {"username": "admin", "password": "chosen-Pass-61"}).status_code
        == 302
    )
    assert client.get("/collections/").status_code == 200


def test_the_upgrade_flags_existing_operators_still_on_the_default_password(root):
    on_default = User.objects.create_superuser(username="old-admin", password="admin", email="")
    migration = importlib.import_module("accounts.migrations.0009_default_operator_password")
    migration.flag_default_passwords(apps, None)
    assert list(AccountPolicy.objects.filter(must_change_password=True).values_list("user", flat=True)) == [
        on_default.pk
    ]
