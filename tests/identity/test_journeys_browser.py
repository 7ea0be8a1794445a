"""The whole journey of a user of each identity source, in a real headless Chromium on a live
server: sign in through OpenID Connect, SAML or the LDAP directory, land in the product in the
team the source's group maps to, and ask a question over a collection shared with that team,
answered (extractively) from its document with a citation chip pointing at it.

The collection belongs to someone else: the user reaches it only through the team, so without
the mapping (or the group) it is neither offered in the chat nor readable. The SAML provider is
on another site than the product (127.0.0.1 against localhost), so its response is a cross-site
POST, which carries no SameSite=Lax session cookie.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
import requests
from django.contrib.auth.models import Group, User

from accounts.models import TeamMapping
from config.base.identity import saml_apps_from_env
from knowledge.models import Collection, Document
from knowledge.services.collections import collection_create
from knowledge.services.teams import collection_share_set
from tests.browser import test_pages_ux
from tests.browser.test_pages_second_pass import answered
from tests.browser.test_pages_ux import DESKTOP, QUESTION, upload
from tests.conftest import CORPUS
from tests.identity import test_ldap
from tests.identity.conftest import ALICE, ALICE_SAML, SAML_ATTRIBUTES
from tests.identity.oidc_provider import oidc_provider
from tests.identity.saml_idp import saml_idp
from tests.identity.slapd import USERS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]
chromium = test_pages_ux.chromium  # one Chromium for the module
directory = test_ldap.directory
use_directory = test_ldap.use_directory

HANDBOOK = "Engineering handbook"
DAVE = USERS[1]  # in the directory's groups engineering and sales


@dataclass(frozen=True)
class TeamCollection:
    collection: Collection
    document: Document
    team: Group


@pytest.fixture
def handbook(make_user, no_llm) -> TeamCollection:
    """The owner's collection with a ready document, shared (read) with the team Engineering; the
    owner is the team's only member until a sign-in maps someone into it."""
    owner = make_user("owner")
    team = Group.objects.create(name="Engineering")
    owner.groups.add(team)
    collection = collection_create(name=HANDBOOK, owner=owner)
    document = upload(collection, CORPUS / "text" / "gravity_hill.md")
    assert document.status == Document.Status.READY, document.error
    collection_share_set(collection=collection, user=owner, group=team.pk, can_write=False)
    return TeamCollection(collection=collection, document=document, team=team)


def map_engineering(source: str, handbook: TeamCollection) -> None:
    TeamMapping.objects.create(source=source, external_group="engineering", team=handbook.team)


def asks_over_the_team_collection(page, base: str, username: str, handbook: TeamCollection) -> None:
    """Signed in (landed on the collections page) as ``username``, in the team Engineering: the
    team's collection is listed as the team's, searched in the chat, and the answer cites it."""
    page.wait_for_url(re.compile(r".*/collections/$"))
    assert username in page.inner_text("header")
    listed = page.inner_text("main")
    assert HANDBOOK in listed and "team Engineering" in listed
    user = User.objects.get(username=username)
    assert list(user.groups.all()) == [handbook.team]
    page.goto(f"{base}/chat/")
    page.select_option("select[name=collections]", label=HANDBOOK)
    assert page.inner_text("#scope-words") == f"Searching: {HANDBOOK}"
    page.fill("textarea[name=question]", QUESTION)
    page.press("textarea[name=question]", "Enter")
    answered(page, 1)
    chip = page.locator("#turns .answer a.citation").first
    assert f"/documents/{handbook.document.pk}/" in chip.get_attribute("href")
    assert "gravity" in page.inner_text("#turns .answer").lower()


def does_not_see_the_team_collection(page, base: str, handbook: TeamCollection) -> None:
    page.wait_for_url(re.compile(r".*/collections/$"))
    assert HANDBOOK not in page.inner_text("main")
    page.goto(f"{base}/chat/")
    offered = page.eval_on_selector_all("select[name=collections] option", "os => os.map(o => o.text)")
    assert HANDBOOK not in offered
    assert page.goto(f"{base}/collections/{handbook.collection.pk}/").status == 404


def test_an_openid_connect_user_lands_in_the_mapped_team_and_asks_over_its_collection(
    chromium, live_server, tmp_path, settings, handbook
):
    map_engineering("oidc:corp", handbook)
    users = {"alice": ALICE, "bob": {**ALICE, "email": "bob@example.org", "groups": ["sales"]}}
    with oidc_provider(tmp_path, "corp", users, our_origin=live_server.url) as provider:
        openid = settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]
        settings.SOCIALACCOUNT_PROVIDERS = {
            **settings.SOCIALACCOUNT_PROVIDERS,
            "openid_connect": {**openid, "APPS": [provider.app()]},
        }

        def signed_in(login: str):
            page = chromium.new_context(viewport=DESKTOP).new_page()
            page.goto(f"{live_server.url}/accounts/login/")
            page.click("text=Sign in with Test corp")
            page.wait_for_url(re.compile(rf"^{re.escape(provider.issuer)}/interaction/"))
            page.fill("input[name=login]", login)
            page.fill("input[name=password]", "any")
            page.click("button[type=submit]")
            page.click("text=Continue")
            return page

        alice = signed_in("alice")
        asks_over_the_team_collection(alice, live_server.url, "alice", handbook)
        bob = signed_in("bob")  # the same provider's user, without the group
        does_not_see_the_team_collection(bob, live_server.url, handbook)
        assert not User.objects.get(email="bob@example.org").groups.exists()


@pytest.fixture
def saml_provider(tmp_path, settings, monkeypatch, live_server):
    """The test SAML provider (on 127.0.0.1, another site than the live server's localhost) as the
    product's provider "corp", configured through SAML_PROVIDERS, knowing the product from the
    service-provider metadata the live server serves (its ACS at the live server's origin)."""
    with saml_idp(tmp_path, {"alice": ALICE_SAML}) as idp:
        entry = {
            "slug": "corp",
            "name": "Test corp",
            "attribute_mapping": SAML_ATTRIBUTES,
            "metadata_url": idp.entity_id,
            "entity_id": idp.entity_id,
        }
        monkeypatch.setenv("SAML_PROVIDERS", json.dumps([entry]))
        settings.SOCIALACCOUNT_PROVIDERS = {
            **settings.SOCIALACCOUNT_PROVIDERS,
            "saml": {**settings.SOCIALACCOUNT_PROVIDERS["saml"], "APPS": saml_apps_from_env()},
        }
        served = requests.get(f"{live_server.url}/accounts/saml/corp/metadata/", timeout=30)
        assert served.status_code == 200 and f"{live_server.url}/accounts/saml/corp/acs/" in served.text
        idp.trust(served.content)
        yield idp


def test_a_saml_user_lands_in_the_mapped_team_and_asks_over_its_collection(
    chromium, live_server, saml_provider, handbook
):
    map_engineering("saml:corp", handbook)
    page = chromium.new_context(viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.click("text=Sign in with Test corp")
    page.wait_for_url(re.compile(rf"^{re.escape(saml_provider.url)}/sso/redirect"))
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "any")
    page.click("text=Sign in")
    page.click("text=Continue")  # the provider's form posts the response to the product's ACS
    asks_over_the_team_collection(page, live_server.url, "alice", handbook)


def test_a_directory_user_lands_in_the_mapped_team_and_asks_over_its_collection(
    chromium, live_server, use_directory, handbook
):
    map_engineering("ldap", handbook)
    page = chromium.new_context(viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", DAVE.uid)
    page.fill("input[name=password]", DAVE.password)
    page.click("button[type=submit]")
    asks_over_the_team_collection(page, live_server.url, DAVE.uid, handbook)
