"""SCIM 2.0 provisioning (/scim/v2/) over real HTTP (pytest-django's live server), with the
requests Microsoft Entra ID and Okta document: users and groups created, found by filter, paged,
patched in each provider's shape, replaced, deactivated and deleted; and the refusals: no token, a
wrong or revoked one, a local account, an operator or a team that SCIM must not take over, bad
input (400, nothing written)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from accounts.audit import audit_context
from accounts.models import AuditEvent, ScimAccount, ScimToken, TeamGrant
from accounts.scim import http as scim_http
from accounts.scim.tokens import scim_token_create, scim_token_revoke
from knowledge.models import Collection
from knowledge.services.collections import collection_create
from tests.conftest import throttle_rates
from tests.identity.conftest import signed_in_user
from tests.identity.oidc_provider import sign_in
from tests.identity.scim_client import (
    ERROR_SCHEMA,
    SCIM_JSON,
    ScimClient,
    entra_group,
    entra_user,
    okta_group,
    okta_user,
    scim_client,
)

pytestmark = pytest.mark.django_db(transaction=True)  # the live server reads what the test commits
ENTRA_ACTOR = "scim:entra/Entra ID"


@pytest.fixture
def entra(live_server):
    return scim_client(live_server.url, name="Entra ID", source="entra")


@pytest.fixture
def okta(live_server):
    return scim_client(live_server.url, name="Okta", source="okta")


def created(client: ScimClient, path: str, body: dict) -> dict:
    answer = client.post(path, body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def error_of(answer, status: int, scim_type: str | None = None) -> str:
    """The SCIM error's detail, after checking its status, schema and scimType."""
    assert answer.status_code == status, answer.text
    assert answer.headers["Content-Type"] == SCIM_JSON
    body = answer.json()
    assert body["schemas"] == [ERROR_SCHEMA] and body["status"] == str(status)
    assert body.get("scimType") == scim_type
    return body["detail"]


def actions() -> list[str]:
    return list(AuditEvent.objects.order_by("id").values_list("action", flat=True))


def test_entra_creates_finds_patches_disables_and_deletes_a_user(entra):
    user_name = "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1@testuser.com"
    answer = entra.post("Users", entra_user(user_name))
    assert answer.status_code == 201 and answer.headers["Content-Type"] == SCIM_JSON
    resource = answer.json()
    assert answer.headers["Location"] == resource["meta"]["location"]
    assert resource["userName"] == user_name and resource["active"] is True
    assert resource["externalId"] == "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"
    account = User.objects.get(pk=resource["id"])
    assert (account.first_name, account.last_name, account.email) == (
        "givenName",
        "familyName",
        "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1@testuser.com",
    )
    assert not account.has_usable_password()

    found = entra.get("Users", filter=f'userName eq "{user_name}"').json()
    assert found["totalResults"] == 1 and found["Resources"][0]["id"] == resource["id"]
    none = entra.get("Users", filter='userName eq "non-existent user"').json()
    assert none["totalResults"] == 0 and none["Resources"] == []

    path = f"Users/{resource['id']}"
    patched = entra.patch(
        path,
        {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "updatedEmail@microsoft.com"},
        {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["emails"][0]["value"] == "updatedEmail@microsoft.com"
    renamed = entra.patch(path, {"op": "Replace", "path": "userName", "value": "5b50642d@testuser.com"})
    assert renamed.json()["userName"] == "5b50642d@testuser.com"

    # Entra ID's documented disable request; without the aadOptscim062020 flag it sends "False".
    assert entra.patch(path, {"op": "Replace", "path": "active", "value": "False"}).json()["active"] is False
    assert entra.patch(path, {"op": "Replace", "path": "active", "value": "True"}).json()["active"] is True
    assert entra.patch(path, {"op": "Replace", "path": "active", "value": False}).json()["active"] is False
    account.refresh_from_db()
    assert not account.is_active and account.last_name == "updatedFamilyName"

    notes = collection_create(name="notes", owner=account)
    assert entra.delete(path).status_code == 204
    error_of(entra.get(path), 404)
    account.refresh_from_db()
    assert not account.is_active  # the account stays, with what it owns, for the operator
    assert Collection.objects.get(pk=notes.pk).owner == account
    assert [action for action in actions() if action.startswith("scim")] == [
        "scim_token.created",
        "scim.user_created",
        "scim.user_patched",
        "scim.user_patched",
        "scim.user_patched",
        "scim.user_deactivated",
        "scim.user_patched",
        "scim.user_reactivated",
        "scim.user_patched",
        "scim.user_deactivated",
        "scim.user_deleted",
    ]
    event = AuditEvent.objects.get(action="scim.user_created")
    assert (event.actor_name, event.channel, event.changes["source"]) == (
        ENTRA_ACTOR,
        "scim",
        [None, "entra"],
    )


def test_okta_looks_up_creates_replaces_and_deactivates_a_user(okta):
    lookup = okta.get("Users", filter='userName eq "test.user@okta.local"', startIndex="1", count="100")
    assert lookup.json() == {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": 0,
        "startIndex": 1,
        "itemsPerPage": 0,
        "Resources": [],
    }
    resource = created(okta, "Users", okta_user())
    assert resource["name"] == {"givenName": "Test", "familyName": "User"}
    account = User.objects.get(pk=resource["id"])
    assert not account.has_usable_password()  # Okta's password is not kept: users sign in through Okta

    replaced = {**okta_user(), "id": resource["id"], "name": {"givenName": "Another", "familyName": "User"}}
    answer = okta.put(f"Users/{resource['id']}", replaced)
    assert answer.status_code == 200 and answer.json()["name"]["givenName"] == "Another"

    deactivate = {"op": "replace", "value": {"active": False}}
    assert okta.patch(f"Users/{resource['id']}", deactivate).json()["active"] is False
    account.refresh_from_db()
    assert not account.is_active
    reactivate = {"op": "replace", "value": {"active": True, "password": "new-secret"}}
    assert okta.patch(f"Users/{resource['id']}", reactivate).json()["active"] is True
    assert "scim.user_replaced" in actions() and actions().count("scim.user_deactivated") == 1


def test_entra_groups_are_teams_with_members_added_and_removed(entra):
    alice = created(entra, "Users", entra_user("alice@contoso.com", "ext-alice"))
    bob = created(entra, "Users", entra_user("bob@contoso.com", "ext-bob"))
    group = created(entra, "Groups", entra_group("Engineering"))
    team = Group.objects.get(pk=group["id"])
    assert team.name == "Engineering" and group["members"] == []

    path = f"Groups/{group['id']}"
    one = entra.get(path, excludedAttributes="members").json()
    assert one["displayName"] == "Engineering" and "members" not in one
    found = entra.get("Groups", excludedAttributes="members", filter='displayName eq "Engineering"').json()
    assert [item["id"] for item in found["Resources"]] == [group["id"]]

    add = {
        "op": "Add",
        "path": "members",
        "value": [{"$ref": None, "value": alice["id"]}, {"value": bob["id"]}],
    }
    assert entra.patch(path, add).status_code == 204
    assert set(team.user_set.values_list("username", flat=True)) == {"alice@contoso.com", "bob@contoso.com"}
    assert set(TeamGrant.objects.filter(team=team).values_list("source", flat=True)) == {"scim:entra"}
    remove = {"op": "Remove", "path": "members", "value": [{"$ref": None, "value": alice["id"]}]}
    assert entra.patch(path, remove).status_code == 204
    assert list(team.user_set.values_list("username", flat=True)) == ["bob@contoso.com"]
    members = entra.get(path).json()["members"]
    assert [member["value"] for member in members] == [bob["id"]]

    rename = {"op": "Replace", "path": "displayName", "value": "Platform"}
    assert entra.patch(path, rename).status_code == 204
    team.refresh_from_db()
    assert team.name == "Platform"
    assert entra.delete(path).status_code == 204
    assert not Group.objects.filter(pk=team.pk).exists()
    assert User.objects.filter(username="bob@contoso.com", is_active=True).exists()
    assert [a for a in actions() if a.startswith("scim.group")] == [
        "scim.group_created",
        "scim.group_patched",
        "scim.group_patched",
        "scim.group_patched",
        "scim.group_deleted",
    ]


def test_okta_groups_are_renamed_and_lose_members_by_path(okta):
    user = created(okta, "Users", okta_user())
    group = created(okta, "Groups", okta_group())
    path = f"Groups/{group['id']}"
    rename = {"op": "replace", "value": {"id": group["id"], "displayName": "Test SCIMv2 renamed"}}
    assert okta.patch(path, rename).status_code == 204
    add = {
        "op": "add",
        "path": "members",
        "value": [{"value": user["id"], "display": "test.user@okta.local"}],
    }
    assert okta.patch(path, add).status_code == 204
    listed = okta.get("Groups", startIndex="1", count="100").json()
    assert listed["Resources"][0]["displayName"] == "Test SCIMv2 renamed"
    assert listed["Resources"][0]["members"][0]["value"] == user["id"]
    assert okta.patch(path, {"op": "remove", "path": f'members[value eq "{user["id"]}"]'}).status_code == 204
    assert not Group.objects.get(pk=group["id"]).user_set.exists()
    replaced = okta.put(path, {**okta_group("Test SCIMv2"), "members": [{"value": user["id"]}]})
    assert replaced.status_code == 200 and [m["value"] for m in replaced.json()["members"]] == [user["id"]]


def test_a_team_membership_given_by_another_source_stays_when_scim_removes_its_own(entra):
    user = created(entra, "Users", entra_user("dave@contoso.com"))
    group = created(entra, "Groups", entra_group("Sales"))
    team = Group.objects.get(pk=group["id"])
    account = User.objects.get(pk=user["id"])
    TeamGrant.objects.create(user=account, team=team, source="oidc:entra")
    team.user_set.add(account)
    entra.patch(f"Groups/{group['id']}", {"op": "Add", "path": "members", "value": [{"value": user["id"]}]})
    entra.patch(
        f"Groups/{group['id']}", {"op": "Remove", "path": "members", "value": [{"value": user["id"]}]}
    )
    assert team.user_set.filter(pk=account.pk).exists()  # the sign-in's grant still holds
    # Nor does the members filter see the sign-in's grant: the group lists SCIM's members only.
    assert entra.get("Groups", filter=f'members eq "{user["id"]}"').json()["totalResults"] == 0
    entra.patch(f"Groups/{group['id']}", {"op": "Add", "path": "members", "value": [{"value": user["id"]}]})
    found = entra.get("Groups", filter=f'members.value eq "{user["id"]}"').json()
    assert [resource["id"] for resource in found["Resources"]] == [group["id"]]


def test_paging_by_start_index_and_count_with_a_cap(entra, monkeypatch):
    ids = [created(entra, "Users", entra_user(f"user{n}@contoso.com", f"ext-{n}"))["id"] for n in range(5)]
    pages = [entra.get("Users", startIndex=str(start), count="2").json() for start in (1, 3, 5)]
    assert [page["totalResults"] for page in pages] == [5, 5, 5]
    assert [page["startIndex"] for page in pages] == [1, 3, 5]
    assert [page["itemsPerPage"] for page in pages] == [2, 2, 1]
    assert [item["id"] for page in pages for item in page["Resources"]] == ids
    assert entra.get("Users", startIndex="0", count="1").json()["Resources"][0]["id"] == ids[0]
    assert entra.get("Users", count="0").json()["Resources"] == []
    monkeypatch.setattr(scim_http, "MAX_PAGE_SIZE", 3)  # the live server runs in this process
    assert entra.get("Users", count="1000").json()["itemsPerPage"] == 3
    error_of(entra.get("Users", count="many"), 400, "invalidValue")


def test_filters_as_providers_send_them(entra):
    created(entra, "Users", entra_user("erin@contoso.com", "ext-erin"))
    frank = created(entra, "Users", entra_user("frank@contoso.com", "ext-frank"))

    def found(expression: str) -> list[str]:
        answer = entra.get("Users", filter=expression)
        assert answer.status_code == 200, answer.text
        return [item["userName"] for item in answer.json()["Resources"]]

    assert found('externalId eq "ext-frank"') == ["frank@contoso.com"]
    assert found('emails[type eq "work"].value eq "frank@testuser.com"') == ["frank@contoso.com"]
    assert found('userName eq "FRANK@contoso.com"') == ["frank@contoso.com"]  # case-insensitive (RFC 7643)
    assert found(f'id eq "{frank["id"]}"') == ["frank@contoso.com"]
    assert found('id eq "not-a-number"') == []
    assert found('userName eq "erin@contoso.com" or externalId eq "ext-frank"') == [
        "erin@contoso.com",
        "frank@contoso.com",
    ]
    # An attribute it cannot compare is refused, never dropped (which would find everyone).
    assert "nickName" in error_of(entra.get("Users", filter='nickName eq "x"'), 400, "invalidFilter")
    assert "nickName" in error_of(
        entra.get("Users", filter='userName eq "erin@contoso.com" and nickName eq "x"'), 400, "invalidFilter"
    )
    error_of(entra.get("Users", filter="userName eq"), 400, "invalidFilter")
    error_of(entra.get("Users", filter='userName xx "a"'), 400, "invalidFilter")


def test_a_source_sees_only_what_it_provisioned(entra, okta):
    user = created(entra, "Users", entra_user("grace@contoso.com"))
    group = created(entra, "Groups", entra_group("Research"))
    error_of(okta.get(f"Users/{user['id']}"), 404)
    assert okta.get("Users", filter='userName eq "grace@contoso.com"').json()["totalResults"] == 0
    error_of(okta.patch(f"Users/{user['id']}", {"op": "replace", "value": {"active": False}}), 404)
    error_of(okta.delete(f"Groups/{group['id']}"), 404)
    assert User.objects.get(pk=user["id"]).is_active


@pytest.mark.security
@pytest.mark.parametrize("header", [None, "Bearer ", "Bearer scim_not-a-real-token", "Basic dXNlcjpwYXNz"])
def test_scim_without_or_with_a_wrong_token_is_refused_and_recorded(live_server, header):
    client = ScimClient(live_server.url, None)
    if header is not None:
        client.http.headers["Authorization"] = header
    assert error_of(client.get("Users"), 401).startswith("authentication required")
    answer = client.post("Users", okta_user("intruder@evil.example"))
    assert error_of(answer, 401) and answer.headers["WWW-Authenticate"] == 'Bearer realm="scim"'
    assert error_of(client.get("ServiceProviderConfig"), 401)
    assert not User.objects.filter(username="intruder@evil.example").exists()
    refused = AuditEvent.objects.filter(action="scim.refused")
    assert refused.count() == 3 and {event.channel for event in refused} == {"scim"}
    reason = "invalid or revoked token" if header == "Bearer scim_not-a-real-token" else "no bearer token"
    assert {event.changes["reason"][1] for event in refused} == {reason}


@pytest.mark.security
def test_a_revoked_token_is_refused_at_its_next_request(live_server):
    token, secret = scim_token_create(name="Okta", source="okta")
    client = ScimClient(live_server.url, secret)
    assert client.get("Users").status_code == 200
    scim_token_revoke(token=token)
    error_of(client.get("Users"), 401)
    assert ScimToken.objects.get(pk=token.pk).last_used_at is not None


@pytest.mark.security
def test_a_signed_in_session_is_no_scim_credential(live_server, make_user):
    """Never session auth: an operator's browser session (and no token) is refused like anyone."""
    make_user("root", is_staff=True, is_superuser=True)
    browser = ScimClient(live_server.url, None)
    page = browser.http.get(live_server.url + "/accounts/login/", timeout=30)
    csrf = browser.http.cookies["csrftoken"]
    signed_in = browser.http.post(
        live_server.url + "/accounts/login/",
        data={"username": "root", "password": "pw-root", "csrfmiddlewaretoken": csrf},
        headers={"Content-Type": "application/x-www-form-urlencoded", "Referer": page.url},
        timeout=30,
    )
    assert signed_in.status_code == 200 and "sessionid" in browser.http.cookies
    error_of(browser.post("Users", okta_user()), 401)
    assert not User.objects.filter(username="test.user@okta.local").exists()


@pytest.mark.security
@pytest.mark.parametrize("name", ["alice", "ALICE"])
def test_a_local_account_is_never_taken_over_by_user_name(entra, alice, name):
    detail = error_of(entra.post("Users", entra_user(name)), 409, "uniqueness")
    assert "exists already" in detail
    alice.refresh_from_db()
    assert alice.check_password("pw-alice") and not ScimAccount.objects.exists()
    assert entra.get("Users", filter='userName eq "alice"').json()["totalResults"] == 0
    event = AuditEvent.objects.get(action="scim.refused")
    assert event.actor_name == ENTRA_ACTOR and event.changes["status"] == [None, 409]


@pytest.mark.security
def test_an_operator_is_never_changed(entra):
    user = created(entra, "Users", entra_user("henry@contoso.com"))
    User.objects.filter(pk=user["id"]).update(is_staff=True)  # the operator made them an operator
    error_of(entra.patch(f"Users/{user['id']}", {"op": "Replace", "path": "active", "value": "False"}), 403)
    error_of(entra.put(f"Users/{user['id']}", entra_user("henry@contoso.com")), 403)
    error_of(entra.delete(f"Users/{user['id']}"), 403)
    assert User.objects.get(pk=user["id"]).is_active


@pytest.mark.security
def test_an_existing_team_is_never_taken_over_by_display_name(entra):
    with audit_context(channel="command"):
        Group.objects.create(name="Engineering")
    error_of(entra.post("Groups", entra_group("engineering")), 409, "uniqueness")
    other = created(entra, "Groups", entra_group("Support"))
    rename = {"op": "Replace", "path": "displayName", "value": "Engineering"}
    error_of(entra.patch(f"Groups/{other['id']}", rename), 409, "uniqueness")
    assert Group.objects.filter(name="Engineering").count() == 1


def test_a_member_must_be_a_user_of_the_source(entra, okta, alice):
    group = created(entra, "Groups", entra_group("Finance"))
    outsider = created(okta, "Users", okta_user())
    for member in (str(alice.pk), outsider["id"], "nope"):
        add = {"op": "Add", "path": "members", "value": [{"value": member}]}
        error_of(entra.patch(f"Groups/{group['id']}", add), 400, "invalidValue")
    assert not Group.objects.get(pk=group["id"]).user_set.exists()


def test_bad_input_is_a_400_and_writes_nothing(entra):
    user = created(entra, "Users", entra_user("ivan@contoso.com"))
    path = f"Users/{user['id']}"
    broken = entra.http.post(entra.base + "Users", data=b'{"userName": ', timeout=30)
    error_of(broken, 400, "invalidSyntax")
    error_of(entra.post("Users", {"userName": "x"}), 400, "invalidSyntax")  # no User schema
    error_of(entra.post("Users", {**entra_user("bad name!"), "externalId": "x"}), 400, "invalidValue")
    error_of(
        entra.post("Users", {**entra_user("jo@contoso.com"), "emails": [{"value": "no"}]}),
        400,
        "invalidValue",
    )
    error_of(entra.request("PATCH", path, {"Operations": []}), 400, "invalidSyntax")
    error_of(entra.patch(path, {"op": "Frobnicate", "path": "active", "value": True}), 400, "invalidSyntax")
    error_of(entra.patch(path, {"op": "Replace", "path": "active", "value": "maybe"}), 400, "invalidValue")
    # A good operation before a bad one: the request is refused whole.
    detail = error_of(
        entra.patch(
            path,
            {"op": "Replace", "path": "active", "value": "False"},
            {"op": "Replace", "path": "favouriteColour", "value": "blue"},
        ),
        400,
        "invalidPath",
    )
    assert "favouriteColour" in detail
    assert User.objects.get(pk=user["id"]).is_active
    # Attributes of the User schemas the product does not keep are accepted (Entra ID sends them).
    kept = entra.patch(
        path,
        {"op": "Add", "path": "title", "value": "Engineer"},
        {
            "op": "Replace",
            "path": f"{'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'}:department",
        },
    )
    assert kept.status_code == 200, kept.text
    error_of(entra.get("Users/999999"), 404)
    error_of(entra.get("Users/abc"), 404)
    assert User.objects.filter(username__in=["x", "bad name!", "jo@contoso.com"]).count() == 0


def test_a_deleted_user_comes_back_only_for_the_same_external_id(entra):
    first = created(entra, "Users", entra_user("kim@contoso.com", "ext-kim"))
    assert entra.delete(f"Users/{first['id']}").status_code == 204
    error_of(entra.post("Users", entra_user("kim@contoso.com", "someone-else")), 409, "uniqueness")
    again = created(entra, "Users", entra_user("kim@contoso.com", "ext-kim"))
    assert again["id"] == first["id"] and again["active"] is True


def test_the_service_provider_describes_itself(entra):
    config = entra.get("ServiceProviderConfig").json()
    assert config["patch"]["supported"] is True and config["filter"]["maxResults"] == scim_http.MAX_PAGE_SIZE
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    types = entra.get("ResourceTypes").json()
    assert {item["id"] for item in types["Resources"]} == {"User", "Group"}
    assert entra.get("Schemas/urn:ietf:params:scim:schemas:core:2.0:User").json()["name"] == "User"
    error_of(entra.get("Schemas/urn:nothing"), 404)


@pytest.mark.security
def test_refusals_past_the_auth_rate_are_429_and_not_recorded_again(live_server, settings):
    throttle_rates(settings, auth="2/minute")
    client = ScimClient(live_server.url, "scim_wrong")
    assert [client.get("Users").status_code for _ in range(4)] == [401, 401, 429, 429]
    assert "Retry-After" in client.get("Users").headers
    assert AuditEvent.objects.filter(action="scim.refused").count() == 2


@pytest.mark.parametrize(
    "expression",
    [
        'id gt "abc"',
        'id eq "123456789012345678901234567890"',
        "id gt 99999999999999999999999",
        'active eq "yes"',
        "active gt 3",
        "userName pr",
        'members eq "x"',
        'not (userName eq "a")',
        'emails[value co "@"]',
        'meta.created gt "2011-05-13T04:42:34Z"',
        '"userName" eq "a"',
        "(" * 200,
        'userName eq "a" and (' * 50,
    ],
)
def test_no_filter_is_a_server_error(entra, expression):
    path = "Groups" if "members" in expression else "Users"
    assert entra.get(path, filter=expression).status_code in (200, 400)


@pytest.mark.parametrize(
    "path", ["Users/123456789012345678901234567890", "Groups/99999999999999999999", "Users/%C2%B9"]
)
def test_no_id_is_a_server_error(entra, path):
    error_of(entra.get(path), 404)
    error_of(entra.patch(path, {"op": "Replace", "path": "active", "value": False}), 404)


def test_no_page_is_a_server_error(entra):
    created(entra, "Users", entra_user("lee@contoso.com"))
    for start in ("99999999999999999999999", "-5"):
        assert entra.get("Users", startIndex=start).status_code == 200


def test_a_provisioned_user_signs_in_through_the_provider_to_the_same_account(entra, start_provider, client):
    """SCIM makes the account; the first OpenID Connect sign-in links to it by the verified address."""
    resource = created(entra, "Users", entra_user("mona@contoso.com"))
    start_provider(
        "entra",
        {"mona-object-id": {"email": "mona@testuser.com", "email_verified": True}},
        email_authentication=True,
    )
    sign_in(client, "entra", "mona-object-id")
    assert signed_in_user(client) == User.objects.get(pk=resource["id"])
    entra.patch(f"Users/{resource['id']}", {"op": "Replace", "path": "active", "value": "False"})
    assert client.get("/collections/").status_code == 302


@pytest.mark.security
def test_an_e_mail_address_another_account_has_is_refused(entra, okta, make_user):
    """A provider's first sign-in may link to the one account with its address: no source may give
    another account's address to one of its own, whether it creates, replaces or patches."""
    make_user("dora", email="dora@corp.example")
    mine = created(okta, "Users", okta_user("olga@okta.local"))
    theirs = created(entra, "Users", entra_user("erin@contoso.com"))  # erin@testuser.com
    taken = {**okta_user("dora.copy@okta.local", "ext-dora"), "emails": [{"value": "DORA@corp.example"}]}
    error_of(okta.post("Users", taken), 409, "uniqueness")
    to_theirs = {"op": "replace", "path": 'emails[type eq "work"].value', "value": "erin@testuser.com"}
    error_of(okta.patch(f"Users/{mine['id']}", to_theirs), 409, "uniqueness")
    replaced = {**okta_user("olga@okta.local"), "emails": [{"value": "dora@corp.example", "primary": True}]}
    error_of(okta.put(f"Users/{mine['id']}", replaced), 409, "uniqueness")
    assert User.objects.get(pk=mine["id"]).email == "olga@okta.local"
    assert User.objects.get(pk=theirs["id"]).email == "erin@testuser.com"
    assert not User.objects.filter(username="dora.copy@okta.local").exists()
    own = {"op": "replace", "path": 'emails[type eq "work"].value', "value": "Olga@okta.local"}
    assert okta.patch(f"Users/{mine['id']}", own).status_code == 200  # its own address, in other case


@pytest.mark.security
@pytest.mark.parametrize("schemas", [1, True, "urn:ietf:params:scim:schemas:core:2.0:UserXX", {"a": 1}])
def test_schemas_that_are_no_list_are_refused_not_an_error(entra, schemas):
    error_of(entra.post("Users", {"schemas": schemas, "userName": "a"}), 400, "invalidSyntax")
    error_of(entra.post("Groups", {"schemas": schemas, "displayName": "A"}), 400, "invalidSyntax")
    user = created(entra, "Users", entra_user("paul@contoso.com"))
    body = {"schemas": schemas, "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}
    error_of(entra.request("PATCH", f"Users/{user['id']}", body), 400, "invalidSyntax")
    assert User.objects.get(pk=user["id"]).is_active and not User.objects.filter(username="a").exists()


@pytest.mark.security
def test_an_operators_team_membership_is_never_changed_by_a_group(entra):
    henry = created(entra, "Users", entra_user("henry@contoso.com"))
    ivy = created(entra, "Users", entra_user("ivy@contoso.com", "ext-ivy"))
    group = created(entra, "Groups", {**entra_group("Finance"), "members": [{"value": henry["id"]}]})
    User.objects.filter(pk__in=[henry["id"], ivy["id"]]).update(is_staff=True)
    path = f"Groups/{group['id']}"
    remove = {"op": "Remove", "path": f'members[value eq "{henry["id"]}"]'}
    error_of(entra.patch(path, remove), 403)
    error_of(entra.put(path, {**entra_group("Finance"), "members": []}), 403)
    error_of(entra.patch(path, {"op": "Add", "path": "members", "value": [{"value": ivy["id"]}]}), 403)
    members = set(Group.objects.get(pk=group["id"]).user_set.values_list("pk", flat=True))
    assert members == {int(henry["id"])}


def test_removing_a_member_deleted_since_is_no_error(entra):
    """Entra ID sends a group's removals after it deleted the user; a refusal would be retried for ever."""
    gone = created(entra, "Users", entra_user("gus@contoso.com"))
    stays = created(entra, "Users", entra_user("hal@contoso.com", "ext-hal"))
    both = [{"value": gone["id"]}, {"value": stays["id"]}]
    group = created(entra, "Groups", {**entra_group("Legal"), "members": both})
    assert entra.delete(f"Users/{gone['id']}").status_code == 204
    answer = entra.patch(f"Groups/{group['id']}", {"op": "Remove", "path": "members", "value": both})
    assert answer.status_code == 204, answer.text
    assert not Group.objects.get(pk=group["id"]).user_set.exists()
    link = ScimAccount.objects.get(user_id=gone["id"])
    assert link.updated_at == link.deleted_at  # meta.lastModified says when it was deleted
