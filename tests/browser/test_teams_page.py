"""Teams in a real headless Chromium: Alice shares her collection with her team on its page, and a
member of that team then finds it among their collections and asks about it."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group

from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import SIZES, ask, signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]
chromium = test_pages_ux.chromium  # one Chromium for the module
hills = test_pages_ux.hills


def test_an_owner_shares_with_a_team_and_a_member_asks_about_the_collection(
    chromium, live_server, hills, alice, make_user, no_llm
):
    geology = Group.objects.create(name="Geology")
    Group.objects.create(name="Not hers")
    dora = make_user("dora")
    alice.groups.add(geology)
    dora.groups.add(geology)

    owner = signed_in(chromium, live_server.url, "alice", SIZES["desktop"])
    owner.goto(f"{live_server.url}/collections/{hills.pk}/")
    owner.click("#teams > summary")  # a named section, closed until opened
    assert owner.inner_text("#no-team-shares") == "Not shared with any team."
    # Only the teams she is in are offered.
    offered = owner.eval_on_selector_all(
        "#share-team-form select[name=group] option", "os => os.map(o => o.text)"
    )
    assert offered == ["Geology"]
    owner.select_option("#share-team-form select[name=access]", "read")
    owner.click("#share-team-form button")
    owner.wait_for_selector("#team-shares")
    assert "Geology" in owner.inner_text("#team-shares") and "read" in owner.inner_text("#team-shares")
    assert "Members of Geology can read it now." in owner.inner_text("main")

    member = signed_in(chromium, live_server.url, "dora", SIZES["desktop"])
    assert "team Geology" in member.inner_text("main")  # in her collections, and how she reaches it
    member.click("text=Hills")
    member.wait_for_url(re.compile(rf".*/collections/{hills.pk}/$"))
    assert "shared with your team Geology (read)" in member.inner_text("main")
    assert member.locator("#upload-form").count() == 0 and member.locator("#teams").count() == 0
    member.click("#ask-collection")
    member.wait_for_url(re.compile(rf".*/chat/\?collection={hills.pk}$"))
    ask(member)
    member.wait_for_selector(".turn .turn-actions")
    assert member.locator("#sources .source-item").count() >= 1
    assert "gravity" in member.inner_text("#sources").lower()

    # Alice stops sharing: Dora's next visit finds nothing.
    owner.once("dialog", lambda dialog: dialog.accept())
    owner.click("#team-shares button.danger")
    owner.wait_for_selector("#no-team-shares")
    response = member.goto(f"{live_server.url}/collections/{hills.pk}/")
    assert response.status == 404
